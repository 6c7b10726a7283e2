"""PNG plots of the benchmark results (matplotlib, drawn off-screen), one per suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

REFERENCE_COLOUR = "#9e9e9e"
MEASURED_COLOUR = "#1f77b4"


def _figure(width: float = 7.0, height: float = 3.6) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), layout="constrained")


def _save(figure: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _label_bars(axes: Any, bars: Any, unit: str, decimals: int = 0) -> None:
    axes.bar_label(bars, labels=[f"{bar.get_width():,.{decimals}f} {unit}" for bar in bars], padding=3, fontsize=8)


def chunker(results: dict[str, Any], path: Path) -> Path:
    sources = list(results["sources"])
    names = list(results["chars_per_second"])
    figure, axes = _figure(width=8.0, height=0.8 + 0.35 * len(names) * len(sources))
    height = 0.8 / len(sources)
    for offset, source in enumerate(sources):
        figures = results["sources"][source]
        values = [100 * figures["splitters"][name]["agreement"] for name in names]
        label = f"{source} ({figures['cases']} cases{'' if figures['developed_against'] else ', measured only'})"
        bars = axes.barh([index + offset * height for index in range(len(names))], values, height=height, label=label)
        axes.bar_label(bars, labels=[f"{value:.1f}%" for value in values], padding=3, fontsize=7)
    axes.set_yticks([index + height * (len(sources) - 1) / 2 for index in range(len(names))], names)
    axes.invert_yaxis()
    axes.set_xlim(0, 118)
    axes.set_xlabel("cases split as expected (%)")
    axes.legend(fontsize=7, loc="lower right")
    axes.set_title("Sentence chunking per corpus source: this project's chunker and peers' splitters", fontsize=10)
    return _save(figure, path)


def tts(results: dict[str, Any], path: Path) -> Path:
    figure, axes = _figure(height=2.6)
    names = ["whole passage, reference", "first sentence, reference", "whole passage, here",
             "first sentence, here"]
    values = [results["reference"]["whole_ms"], results["reference"]["first_sentence_ms"],
              results["whole"]["mean"], results["first_sentence"]["mean"]]
    bars = axes.barh(names, values, color=[REFERENCE_COLOUR] * 2 + [MEASURED_COLOUR] * 2)
    _label_bars(axes, bars, "ms")
    axes.invert_yaxis()
    axes.set_xlabel("mean time to first audio byte (ms)")
    axes.set_title(f"Isolated TTS: whole passage vs first sentence\n({results['reduction']:+.1%} here on a CPU, "
                   f"{results['reference']['reduction']:+.1%} reference on a GPU)", fontsize=10)
    axes.margins(x=0.25)
    return _save(figure, path)


def agent(results: dict[str, Any], path: Path) -> Path:
    figure, axes = _figure(height=2.8)
    names = list(results["summary"])
    first = [results["summary"][name]["time_to_first_audio_ms"]["mean"] for name in names]
    total = [results["summary"][name]["total_ms"]["mean"] for name in names]
    axes.barh(names, total, color="#d9e6f2", label="total")
    bars = axes.barh(names, first, color=MEASURED_COLOUR, label="first audio")
    _label_bars(axes, bars, "ms")
    axes.invert_yaxis()
    axes.set_xlabel("ms from the request (caller side)")
    axes.set_title(f"Agent: first audio {results['first_audio_ratio']}x sooner incremental than batch\n"
                   f"(reference {results['reference']['ratio_local']}x local, "
                   f"{results['reference']['ratio_deployed']}x deployed)", fontsize=10)
    axes.margins(x=0.2)
    axes.legend(loc="upper right", fontsize=8)
    return _save(figure, path)


def encoding(results: dict[str, Any], path: Path) -> Path:
    figure, axes = _figure(height=2.8)
    names, values, colours = [], [], []
    for fmt, figures in results["formats"].items():
        if fmt in ("pcm16", "wav"):
            continue
        if fmt in results["reference"]:
            names.append(f"{fmt}, reference")
            values.append(results["reference"][fmt]["measured_kbps"])
            colours.append(REFERENCE_COLOUR)
        names.append(f"{fmt} ({figures['label_kbps']:g}k label), here")
        values.append(figures["measured_kbps"])
        colours.append(MEASURED_COLOUR)
    bars = axes.barh(names, values, color=colours)
    _label_bars(axes, bars, "kbps", decimals=1)
    axes.invert_yaxis()
    axes.set_xlabel("measured bit rate (kbps)\nraw PCM16 is 384 kbps; Base64 adds a third to any format")
    axes.set_title(f"Caller formats over {results['clips']} clips", fontsize=10)
    axes.margins(x=0.2)
    return _save(figure, path)


def capacity(results: dict[str, Any], path: Path) -> Path:
    figure, left = _figure()
    levels = sorted(results["levels"], key=int)
    sessions = [int(level) for level in levels]
    left.plot(sessions, [results["levels"][level]["time_to_first_audio_ms"]["p50"] for level in levels], "o-",
              color=MEASURED_COLOUR, label="first audio p50")
    left.plot(sessions, [results["levels"][level]["time_to_first_audio_ms"]["p95"] for level in levels], "o--",
              color=MEASURED_COLOUR, alpha=0.6, label="first audio p95")
    left.set_xlabel("concurrent sessions")
    left.set_ylabel("time to first audio (ms)")
    left.set_xticks(sessions)
    right = left.twinx()
    right.plot(sessions, [results["levels"][level]["audio_seconds_per_second"] for level in levels], "s-",
               color="#d62728", label="audio s per s")
    right.set_ylabel("seconds of audio produced per second")
    right.set_ylim(0, 1.25 * max(results["levels"][level]["audio_seconds_per_second"] for level in levels))
    left.set_ylim(0, None)
    handles = left.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    left.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="upper left")
    left.set_title(f"Capacity of one TTS server (saturates at {results['saturates_at']} sessions)", fontsize=10)
    return _save(figure, path)


def overhead(results: dict[str, Any], path: Path) -> Path:
    figure, axes = _figure(height=3.0)
    values = sorted(results["overhead_ms"]["samples"])
    axes.hist(values, bins=min(20, max(5, len(values))), color=MEASURED_COLOUR)
    axes.axvline(results["overhead_ms"]["p50"], color="black", linestyle="--", label="p50")
    axes.axvline(results["overhead_ms"]["p95"], color="#d62728", linestyle=":", label="p95")
    axes.set_xlabel("time to first audio - (first chunk ready + its model inference), ms")
    axes.set_ylabel("answers")
    axes.set_title("The pipeline's own overhead on the way to first audio", fontsize=10)
    axes.legend(fontsize=8)
    return _save(figure, path)


def reliability(results: dict[str, Any], path: Path) -> Path:
    """The soak over time: both processes' resident memory, and the agent's tasks and descriptors."""
    samples = results["soak"]["samples"]
    answers = [sample["answers"] for sample in samples]
    figure, left = _figure(height=3.4)
    left.plot(answers, [sample["agent_process"]["rss_mb"] for sample in samples], "-", color=MEASURED_COLOUR,
              label="agent resident MB")
    left.plot(answers, [sample["tts_process"]["rss_mb"] for sample in samples], "-", color="#2ca02c",
              label="TTS server resident MB")
    left.set_xlabel("answers")
    left.set_ylabel("resident memory (MB)")
    left.set_ylim(0, None)
    right = left.twinx()
    right.plot(answers, [sample["agent"]["tasks"] for sample in samples], "--", color="#d62728",
               label="agent asyncio tasks")
    right.plot(answers, [sample["agent"]["open_fds"] for sample in samples], ":", color="#9467bd",
               label="agent open descriptors")
    right.set_ylabel("count")
    right.set_ylim(0, None)
    handles = left.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    left.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="center right")
    left.set_title(f"Soak: {results['soak']['answers']} answers through one agent and one TTS server", fontsize=10)
    return _save(figure, path)
