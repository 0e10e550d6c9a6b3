"""The notes that say where an answer's speed ranges come from (pure): one per group, out of sample
by source. Apart from `reports.common` so that `fit`, which prints no speed, does not import the
speed model (serving.load and its tables: about 5% of fit's start-up instructions)."""

from __future__ import annotations

from collections.abc import Iterable

from gpusize.serving.load import (
    ACROSS_SERVERS_WORDS,
    METRIC_WORDS,
    MIN_RANGE_FIGURES,
    SpeedRange,
)

__all__ = ["speed_range_notes"]


def speed_range_notes(ranges: Iterable[SpeedRange]) -> list[str]:
    """One note per group the speed ranges of an answer come from, once each, in order: its range,
    figures out of sample by source and mean error (flagged above 30%), on a GPU outside the engine's
    fit marked with its architecture (unless the range is an in-fit GPU's of the same answer), and
    once per engine and architecture what that means (`SpeedRange.outside_words`); the figures a group has no
    range for (not calibrated there) on one line per engine, architecture and load; one engine across
    servers on one line, with what the public multi-server runs measured."""
    unique = list(dict.fromkeys(ranges))
    known = set(unique)
    # a range on a GPU outside the engine's fit that widening left as an in-fit GPU's prints it: one line
    notes = [
        f"speed range, {r.words()}"
        for r in unique
        if r.calibrated and (r.outside_fit is None or r.inside() not in known)
    ]
    notes += list(dict.fromkeys(w for w in (r.outside_words() for r in unique) if w is not None))
    if any(r.basis == "servers" for r in unique):
        notes.append(
            "speed not calibrated for one engine across servers (tensor, pipeline or expert parallel "
            f"over the link): no range shown; {ACROSS_SERVERS_WORDS}"
        )
    bare: dict[str, list[SpeedRange]] = {}
    for r in unique:
        if not r.calibrated and r.basis != "servers":
            bare.setdefault(r.where(), []).append(r)
    for where, members in bare.items():
        metrics = ", ".join(METRIC_WORDS[r.metric] for r in members)
        seen = sum(r.figures for r in members)
        pooled = max(r.engine_figures for r in members)
        plural = "s" if seen != 1 else ""
        why = (
            f"{seen} out-of-sample figure{plural} of this group, {pooled} of the engine's: too few for a "
            f"range (at least {MIN_RANGE_FIGURES})"
            if pooled
            else "no published figure of this engine there"
        )
        notes.append(f"speed not calibrated for {where} ({metrics}): no range shown; {why}")
    return notes
