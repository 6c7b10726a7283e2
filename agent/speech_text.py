"""Speech-ready text: what the TTS should say for a chunk of model output. Pure, no I/O.

Two steps, in order:

1. **Markdown is for eyes.** Emphasis markers, headings, list markers, block quotes and emoji are
   dropped; links keep their text; a bare URL is read as its host name; inline code is read
   without its ticks; fenced code blocks are skipped (or read, if asked). Symbols that are not
   markup are left alone: ``x**2``, ``*.py`` and ``2 * 3`` keep their stars.
2. **Numbers are read as a person reads them**, with ``num2words``: money ("$42.50" -> "forty-two
   dollars and fifty cents"), percentages, ordinals, years, ISO dates, times, versions and
   addresses, decimals, thousands, units after a number ("10 ms" -> "ten milliseconds"), and the
   common abbreviations ("e.g.", "Dr.", "vs.").

A :class:`SpeechText` instance serves one answer: it remembers whether a code fence is open,
because the chunker delivers a fenced block line by line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import emoji
from num2words import num2words

CODE_BLOCK_MODES = ("skip", "read")

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"\b(?:https?://|www\.)([A-Za-z0-9.-]+)[^\s)]*")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+", re.MULTILINE)
_QUOTE = re.compile(r"^\s*>+\s?", re.MULTILINE)
_EMPHASIS = re.compile(r"(?<![\w*_])(\*\*\*|\*\*|__|\*|_)(?=[^\s*_])(.+?)(?<=[^\s*_])\1(?![\w*_])")
_CODE_TICKS = re.compile(r"`+")

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_MONTH_ABBREVIATIONS = {"Jan": "January", "Feb": "February", "Mar": "March", "Apr": "April", "Jun": "June",
                        "Jul": "July", "Aug": "August", "Sep": "September", "Sept": "September",
                        "Oct": "October", "Nov": "November", "Dec": "December"}
_CURRENCIES = {"$": ("dollar", "dollars", "cent", "cents"), "€": ("euro", "euros", "cent", "cents"),
               "£": ("pound", "pounds", "penny", "pence")}
_SCALES = {"k": "thousand", "thousand": "thousand", "m": "million", "million": "million", "mn": "million",
           "b": "billion", "bn": "billion", "billion": "billion", "t": "trillion", "trillion": "trillion"}
_UNITS = {
    "ms": "milliseconds", "s": "seconds", "sec": "seconds", "secs": "seconds", "min": "minutes", "mins": "minutes",
    "h": "hours", "hr": "hours", "hrs": "hours", "µs": "microseconds", "us": "microseconds", "ns": "nanoseconds",
    "km": "kilometers", "m": "meters", "cm": "centimeters", "mm": "millimeters", "mi": "miles", "ft": "feet",
    "kg": "kilograms", "g": "grams", "mg": "milligrams", "lb": "pounds", "lbs": "pounds",
    "kb": "kilobytes", "mb": "megabytes", "gb": "gigabytes", "tb": "terabytes", "kib": "kibibytes",
    "mib": "mebibytes", "gib": "gibibytes", "kbps": "kilobits per second", "mbps": "megabits per second",
    "gbps": "gigabits per second", "hz": "hertz", "khz": "kilohertz", "mhz": "megahertz", "ghz": "gigahertz",
    "°c": "degrees Celsius", "°f": "degrees Fahrenheit", "mph": "miles per hour", "km/h": "kilometers per hour",
    "w": "watts", "kw": "kilowatts", "v": "volts", "ml": "milliliters", "l": "liters",
}
_ABBREVIATIONS = [
    (re.compile(r"\be\.g\.(?=\s|,|$)", re.IGNORECASE), "for example"),
    (re.compile(r"\bi\.e\.(?=\s|,|$)", re.IGNORECASE), "that is"),
    (re.compile(r"\bvs\.?(?=\s)"), "versus"),
    (re.compile(r"\betc\.(?=\s|,|$)"), "et cetera"),
    (re.compile(r"\bapprox\.(?=\s)", re.IGNORECASE), "approximately"),
    (re.compile(r"\bDr\.(?=\s)"), "Doctor"),
    (re.compile(r"\bMr\.(?=\s)"), "Mister"),
    (re.compile(r"\bMrs\.(?=\s)"), "Missus"),
    (re.compile(r"\bProf\.(?=\s)"), "Professor"),
    (re.compile(r"\bNo\.(?=\s*\d)"), "number"),
    (re.compile(r"\b([ap])\.m\.", re.IGNORECASE), lambda m: f"{m[1].lower()} m"),
    (re.compile(r"&"), " and "),
]

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_MONEY = re.compile(rf"(?:(?<![\w-])(-))?([$€£])\s?({_NUMBER})"
                    rf"(?:\s?(k|m|mn|b|bn|t|thousand|million|billion|trillion)\b)?", re.IGNORECASE)
_PERCENT = re.compile(rf"(-?)({_NUMBER})\s?%")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY = re.compile(r"\b(" + "|".join(_MONTHS + list(_MONTH_ABBREVIATIONS)) + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b")
_CLOCK_SECONDS = re.compile(r"\b(\d{1,2}):([0-5]\d):([0-5]\d)\b")
_TIME = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b(?=(\s?[ap]\.?\s?m\b)?)", re.IGNORECASE)
_DOTTED = re.compile(r"\b(v)?(\d+(?:\.\d+){2,})\b")
_VERSION = re.compile(r"\bv(\d+(?:\.\d+)+)\b")
_ORDINAL = re.compile(r"(?<![\d,])(\d{1,3}(?:,\d{3})+|\d+)(st|nd|rd|th)\b")
_DECADE = re.compile(r"(?<![\d,.])(1[1-9]\d0|20\d0)['’]?s\b", re.IGNORECASE)
_THOUSANDS_SUFFIX = re.compile(rf"(?<![\w.])({_NUMBER})k\b")
"""Lower-case only: "10k" is ten thousand, but "4K" is a display resolution."""
_LEADING_POINT = re.compile(r"(?<![\w.])\.(\d+)(?![\w.])")
_YEAR = re.compile(r"(?<![\d,.])(1[1-9]\d{2}|20\d{2})(?![\d,.]|\s?%)")
_UNIT_NAMES = "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True))
_UNIT = re.compile(rf"(?<![\w.])({_NUMBER})\s?({_UNIT_NAMES})(?![\w/])", re.IGNORECASE)
_PLAIN_NUMBER = re.compile(rf"(?<![\w.])(-?)({_NUMBER})(?![\w])")
_RANGE_DASH = re.compile(r"(?<=\d)\s?[-–]\s?(?=\d)")
_TIMES_SIGN = re.compile(r"(?<=\d)\s+[*×x]\s+(?=\d)")


def _number(text: str) -> str:
    value = text.replace(",", "")
    return num2words(float(value) if "." in value else int(value))


def _money(match: re.Match[str]) -> str:
    sign = "minus " if match[1] else ""
    one, many, cent, cents = _CURRENCIES[match[2]]
    amount = match[3].replace(",", "")
    if match[4]:
        return f"{sign}{_number(amount)} {_SCALES[match[4].lower()]} {many}"
    whole, _, fraction = amount.partition(".")
    units = int(whole)
    words = f"{num2words(units)} {one if units == 1 else many}"
    if fraction:
        hundredths = int((fraction + "0")[:2])
        if hundredths:
            words += f" and {num2words(hundredths)} {cent if hundredths == 1 else cents}"
    return sign + words


def _iso_date(match: re.Match[str]) -> str:
    year, month, day = int(match[1]), int(match[2]), int(match[3])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match[0]
    return f"{_MONTHS[month - 1]} {num2words(day, to='ordinal')}, {num2words(year, to='year')}"


def _clock(hours: int, minutes: int, *, meridiem: bool = False) -> str:
    """10:05 -> "ten oh five"; 9:00 -> "nine o'clock", or "nine" before "pm"."""
    if minutes == 0:
        return num2words(hours) if meridiem else f"{num2words(hours)} o'clock"
    if minutes < 10:
        return f"{num2words(hours)} oh {num2words(minutes)}"
    return f"{num2words(hours)} {num2words(minutes)}"


def _time(match: re.Match[str]) -> str:
    return _clock(int(match[1]), int(match[2]), meridiem=bool(match[3]))


def _clock_seconds(match: re.Match[str]) -> str:
    """A time or duration to the second: "1:02:03" -> "one oh two and three seconds"."""
    seconds = int(match[3])
    return f"{_clock(int(match[1]), int(match[2]))} and {num2words(seconds)} {'second' if seconds == 1 else 'seconds'}"


def _decade(match: re.Match[str]) -> str:
    """"1980s" -> "nineteen eighties", "1900s" -> "nineteen hundreds"."""
    year = num2words(int(match[1]), to="year")
    return year[:-1] + "ies" if year.endswith("y") else year + "s"


def _dotted(match: re.Match[str]) -> str:
    """Versions and addresses: "v2.1.3" -> "version two point one point three", "10.0.0.1" ->
    "ten dot zero dot zero dot one"."""
    parts = [num2words(int(part)) for part in match[2].split(".")]
    if match[1]:
        return "version " + " point ".join(parts)
    return (" dot " if len(parts) == 4 else " point ").join(parts)  # four parts: an IPv4 address


_NUMBER_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (_MONEY, _money),
    (_PERCENT, lambda m: f"{'minus ' if m[1] else ''}{_number(m[2])} percent"),
    (_ISO_DATE, _iso_date),
    (_RANGE_DASH, " to "),
    (_TIMES_SIGN, " times "),
    (_MONTH_DAY, lambda m: f"{_MONTH_ABBREVIATIONS.get(m[1], m[1])} {num2words(int(m[2]), to='ordinal')}"),
    (_CLOCK_SECONDS, _clock_seconds),
    (_TIME, _time),
    (_DOTTED, _dotted),
    (_VERSION, lambda m: "version " + " point ".join(num2words(int(p)) for p in m[1].split("."))),
    (_ORDINAL, lambda m: num2words(int(m[1].replace(",", "")), to="ordinal")),
    (_DECADE, _decade),
    (_THOUSANDS_SUFFIX, lambda m: f"{_number(m[1])} thousand"),
    (_LEADING_POINT, lambda m: _number(f"0.{m[1]}")),
    (_UNIT, lambda m: f"{_number(m[1])} {_unit(m[1], m[2])}"),
    (_YEAR, lambda m: num2words(int(m[1]), to="year")),
    (_PLAIN_NUMBER, lambda m: f"{'minus ' if m[1] else ''}{_number(m[2])}"),
]


def _unit(number: str, unit: str) -> str:
    name = _UNITS[unit.lower()]
    return name[:-1] if number == "1" and name.endswith("s") and " " not in name else name


def normalize_numbers(text: str) -> str:
    """Numbers, money, dates, times, units and common abbreviations as words."""
    for pattern, replacement in _ABBREVIATIONS:
        text = pattern.sub(replacement, text)
    for pattern, replacement in _NUMBER_RULES:
        text = pattern.sub(replacement, text)
    return text


def strip_markdown(text: str) -> str:
    """The words of a markdown chunk, without the markup."""
    text = _LINK.sub(r"\1", text)
    text = _URL.sub(lambda m: m[1].removeprefix("www.").rstrip("."), text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub("", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _EMPHASIS.sub(r"\2", text)  # nested: **_both_**
    text = _CODE_TICKS.sub("", text)
    return emoji.replace_emoji(text, replace="")


class SpeechText:
    """Turns one answer's chunks into what the TTS should say, in order. Returns "" for a chunk
    with nothing to say (a code fence line, an emoji alone, a horizontal rule)."""

    def __init__(self, *, code_blocks: str = "skip") -> None:
        if code_blocks not in CODE_BLOCK_MODES:
            raise ValueError(f"code_blocks must be one of {CODE_BLOCK_MODES}")
        self.code_blocks = code_blocks
        self._in_fence = False

    def __call__(self, chunk: str) -> str:
        if _FENCE.match(chunk):
            self._in_fence = not self._in_fence
            return ""
        if self._in_fence and self.code_blocks == "skip":
            return ""
        speech = normalize_numbers(strip_markdown(chunk))
        speech = " ".join(speech.split())
        return speech if any(char.isalnum() for char in speech) else ""


def to_speech(text: str) -> str:
    """One chunk, with no state: :class:`SpeechText` for a whole answer."""
    return SpeechText()(text)
