"""Which word each phoneme belongs to, and when each word is spoken: the alignment and the
arithmetic, on phoneme strings as espeak writes them."""

from __future__ import annotations

import pytest

from tts_protocol import Word
from tts_server.word_timing import Piece, WordSpan, spans, word_owners, word_times


def test_one_phoneme_word_per_word_pairs_them_in_order():
    assert word_owners(["həlˈO", "ðˈɛɹ,"], "həlˈO ðˈɛɹ,") == [0] * 5 + [1] * 5


def test_words_espeak_joins_are_split_where_their_own_phonemes_are():
    # "of the year": espeak writes "of the" as one word in context
    assert word_owners(["ʌv", "ðə", "jˈɪɹ"], "ʌvðə jˈɪɹ") == [0, 0, 1, 1, 2, 2, 2, 2]


def test_a_word_whose_own_phonemes_differ_gets_the_sound_between_its_neighbours():
    # "a" alone is the letter's name ("ˈA"); in a sentence it is "ə"
    assert word_owners(["ðɪs", "ɪz", "ˈA", "tˈɛst"], "ðɪs ɪz ə tˈɛst") == [0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 3]


def test_a_number_read_as_several_words_belongs_to_its_one_word():
    owners = word_owners(["ɪn", "nˈIntin fˈIv", "ɪt"], "ɪn nˈIntin fˈIv ɪt")
    assert owners == [0, 0] + [1] * 11 + [2, 2]


def test_a_piece_says_its_words_without_their_punctuation():
    words = ["Hello,", "there."]
    owners = word_owners(["həlˈO,", "ðˈɛɹ."], "həlˈO, ðˈɛɹ.")
    assert spans(words, owners, 0, "həlˈO, ðˈɛɹ.") == (WordSpan("Hello,", 0, 4), WordSpan("there.", 7, 10))


def test_a_second_piece_continues_where_the_first_one_ended():
    words = ["One,", "two."]
    owners = word_owners(["wˈʌn,", "tˈu."], "wˈʌn, tˈu.")
    assert spans(words, owners, 5, "tˈu.") == (WordSpan("two.", 0, 2),)


def test_a_word_runs_from_its_first_sound_to_its_last_and_the_pauses_fall_between():
    piece = Piece("ab, cd.", (WordSpan("Ab,", 0, 1), WordSpan("cd.", 4, 5)))
    # frames per token: start padding, a, b, ",", " ", c, d, ".", end padding
    durations = [4, 2, 2, 6, 1, 2, 2, 8, 3]
    words = word_times(piece, durations, offset_samples=0, samples_per_frame=600, sample_rate=24_000)
    assert words == [Word("Ab,", 100.0, 200.0), Word("cd.", 375.0, 475.0)]


def test_a_later_piece_is_timed_from_the_audio_before_it():
    piece = Piece("ab", (WordSpan("ab", 0, 1),))
    words = word_times(piece, [1, 1, 1, 1], offset_samples=24_000, samples_per_frame=600, sample_rate=24_000)
    assert words == [Word("ab", 1025.0, 1075.0)]


@pytest.mark.parametrize("phonemes", ["", "   "])
def test_nothing_to_say_owns_nothing(phonemes):
    assert word_owners(["ə"], phonemes) == []
