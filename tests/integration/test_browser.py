"""The browser client in a real headless Chromium (Debian's, driven by Playwright) against the real
local servers: the page loads from the agent, a question is asked over /ws, audio chunks are
scheduled back to back on the Web Audio timeline (the page's own counters), and cancel stops
playback. A screenshot of each run is kept in test-artifacts/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.async_api import async_playwright

CHROMIUM = os.environ.get("VOICE_AGENT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("no chromium here: `./dev.sh test` installs Debian's chromium when it can (apt-get, as root), "
                "or set VOICE_AGENT_CHROMIUM", allow_module_level=True)


@pytest.fixture
async def page():
    assert CHROMIUM, "CI needs a chromium: dev.sh installs Debian's chromium package"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-background-networking", "--autoplay-policy=no-user-gesture-required"])
        try:
            yield await browser.new_page()
        finally:
            await browser.close()


async def stats(page) -> dict:
    return await page.evaluate("() => ({...window.voiceStats})")


async def test_the_page_plays_an_answer_gap_free_while_it_streams(agent_server, page, artifacts: Path):
    await page.goto(f"{agent_server('short').http_url}/")
    assert await page.title() == "voice-agent"
    await page.select_option("#mode", "incremental")
    await page.click("#go")
    await page.wait_for_function("() => ['done', 'error'].includes(window.voiceStats.state)", timeout=60_000)
    result = await stats(page)
    await page.screenshot(path=str(artifacts / "browser-answer.png"), full_page=True)
    print(f"\nbrowser: {result['audioChunks']} chunks, {result['scheduledSeconds']:.2f} s scheduled, "
          f"first text {result['firstTextMs']} ms, first audio {result['firstAudioMs']} ms, "
          f"underruns {result['underruns']}")
    assert result["state"] == "done", result["error"]
    assert result["audioChunks"] > 1 and result["underruns"] == 0, "every chunk starts where the last one ended"
    assert result["audioBytes"] == result["end"]["audio_bytes"]
    assert abs(result["scheduledSeconds"] - result["end"]["audio_seconds"]) < 0.01
    assert 0 < result["firstTextMs"] < result["firstAudioMs"]
    assert (await page.text_content("#first-audio")).endswith("ms")
    assert await page.locator("#rows .row").count() == result["end"]["sentences"]
    assert (await page.text_content("#answer")).strip()


async def test_cancel_stops_playback_and_the_answer(agent_server, page, artifacts: Path):
    await page.goto(f"{agent_server('long').http_url}/")
    await page.click("#go")
    await page.wait_for_function("() => window.voiceStats.audioChunks > 0", timeout=60_000)
    await page.click("#cancel")
    await page.wait_for_function("() => ['cancelled', 'error'].includes(window.voiceStats.state)", timeout=10_000)
    result = await stats(page)
    await page.screenshot(path=str(artifacts / "browser-cancelled.png"), full_page=True)
    assert result["state"] == "cancelled" and result["end"]["cancelled"] is True
    assert result["playing"] == 0, "no audio source is still playing"
    assert result["end"]["stop_ms"] is not None, "the agent stopped the model stream and the TTS session"
    chunks = result["audioChunks"]
    await page.wait_for_timeout(500)
    assert (await stats(page))["audioChunks"] == chunks, "nothing more is scheduled after the cancel"


def word_at(words: list[dict], played_ms: float) -> str | None:
    """The word being heard at ``played_ms``, by the agent's timings (None in a pause)."""
    return next((w["word"] for w in words if w["start_ms"] <= played_ms < w["end_ms"]), None)


async def test_the_captions_highlight_the_word_being_heard_in_step_with_playback(agent_server, page, artifacts: Path):
    await page.goto(f"{agent_server('long').http_url}/")
    await page.click("#go")
    await page.wait_for_function("() => window.voiceCaptions.words().length >= 12 && window.voiceStats.audioChunks > 2",
                                 timeout=60_000)
    samples = []
    for _ in range(16):  # the highlighted word, read from the page at the moment its playhead is read
        samples.append(await page.evaluate("""() => {
            const now = window.voiceCaptions.update();
            const shown = document.querySelector("#captions span.now");
            return { ...now, shown: shown ? shown.textContent : null, at: performance.now() };
        }"""))
        await page.wait_for_timeout(200)
    words = await page.evaluate("() => window.voiceCaptions.words()")
    await page.screenshot(path=str(artifacts / "browser-captions.png"), full_page=True)
    for sample in samples:
        assert sample["shown"] == word_at(words, sample["playedMs"]), sample
    assert sum(sample["shown"] is not None for sample in samples) >= 8, "most samples fall inside a word"
    # The playhead is the audio's: it advances as wall time does while the answer plays.
    advance = samples[-1]["playedMs"] - samples[0]["playedMs"]
    wall = samples[-1]["at"] - samples[0]["at"]
    assert abs(advance - wall) < 250, (advance, wall)
