"""What a run observed, as numbers (``report.json``, CSVs) and as one self-contained HTML page.

Definitions (also in the README):

- a pod's *wait*: from its submission (or, for a preempted pod submitted again, its resubmission) to its
  allocation; percentiles are nearest-rank over every started pod of the queue or user;
- *usage*: the queue's allocated resources sampled over simulated time, beside its guaranteed and max;
- *fair share*: at each sample, the cluster divided among the leaf queues with pods running or waiting,
  in proportion to their guaranteed resources (equal parts when none of them has any), capped at what
  the queue asked for; *deviation* is the mean of |dominant share - fair share| over the samples where
  the queue had pods, *excess* the mean of (dominant share - fair share);
- *gang wait*: from an application's submission until all its placeholders were allocated;
- *utilisation*: allocated resources integrated over time, over capacity x makespan.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from simulate.engine import Outcome, Pod

UNSCHEDULABLE_LISTED = 1000


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of sorted ``values`` (None when empty)."""
    if not values:
        return None
    rank = max(1, math.ceil(q / 100 * len(values)))
    return values[rank - 1]


def _waits(pods: list[Pod]) -> dict:
    waits = sorted(round(p.wait, 3) for p in pods if p.wait is not None)
    return {"wait_p50": percentile(waits, 50), "wait_p95": percentile(waits, 95), "wait_p99": percentile(waits, 99),
            "wait_mean": round(sum(waits) / len(waits), 3) if waits else None, "wait_max": waits[-1] if waits else None}


def _dominant(vcore: float, memory: float, total) -> float:
    shares = [used / total[name] for name, used in (("vcore", vcore), ("memory", memory)) if total.get(name)]
    return max(shares, default=0.0)


def summarise(outcome: Outcome) -> dict:
    """The report of one run (the object ``report.json`` holds per configuration)."""
    real = [p for p in outcome.pods if not p.placeholder]
    by_queue, by_user = defaultdict(list), defaultdict(list)
    for pod in real:
        by_queue[pod.queue or "?"].append(pod)
        by_user[pod.user].append(pod)
    preempted_queue = Counter(p.victim_queue for p in outcome.preemptions)
    preempting_queue = Counter(p.preemptor_queue for p in outcome.preemptions)
    preempted_user = Counter(p.victim_user for p in outcome.preemptions)
    deviation = _fair_share(outcome)
    queues = {}
    leaves = set(by_queue) | {path for path, _ in _leaf_limits(outcome)}
    for path in sorted(leaves):
        pods = by_queue.get(path, [])
        guaranteed, maximum = outcome.queue_limits.get(path, ({}, {}))
        gangs = [g for g in outcome.gangs.values() if g.queue == path]
        gang_waits = sorted(g.running - g.submit for g in gangs if g.running is not None)
        queues[path] = {
            "pods": sum(1 for p in pods if p.attempt == 0), "started": sum(1 for p in pods if p.start is not None),
            **_waits(pods),
            "preempted": preempted_queue.get(path, 0), "preempting": preempting_queue.get(path, 0),
            "unschedulable": sum(1 for p in pods if p.start is None),
            "guaranteed": guaranteed, "max": maximum,
            "usage": [[t, *queues_at[path][:2]] for t, queues_at in outcome.samples if path in queues_at],
            "fair_share_deviation": deviation.get(path, (None, None))[0],
            "fair_share_excess": deviation.get(path, (None, None))[1],
            "gangs": len(gangs), "gang_wait_p50": percentile(gang_waits, 50),
            "gang_wait_p95": percentile(gang_waits, 95), "gang_timeouts": sum(1 for g in gangs if g.timed_out),
            "reservations": outcome.reservations.get(path, 0),
        }
    users = {user: {"pods": sum(1 for p in pods if p.attempt == 0), **_waits(pods),
                    "preempted": preempted_user.get(user, 0),
                    "unschedulable": sum(1 for p in pods if p.start is None)}
             for user, pods in sorted(by_user.items())}
    total = dict(outcome.total)
    span = outcome.makespan
    utilisation = {name: (outcome.used_area.get(name, 0.0) / (total[name] * span) if total.get(name) and span else 0.0)
                   for name in ("vcore", "memory")}
    unschedulable = [p for p in real if p.start is None]
    reasons = Counter(p.reason or "unknown" for p in unschedulable)
    root_usage = [[t, *queues_at["root"][:2]] for t, queues_at in outcome.samples if "root" in queues_at]
    return {
        "queues": queues, "users": users,
        "makespan": span, "utilisation": utilisation["vcore"], "utilisation_memory": utilisation["memory"],
        "nodes": outcome.nodes, "capacity": total, "pods": sum(1 for p in real if p.attempt == 0),
        "applications": len({p.app for p in real}), "rejected_applications": dict(outcome.rejected_apps),
        "preemptions": [{**vars(p), "preemptor_queue": p.preemptor_queue} for p in outcome.preemptions],
        "gang_timeouts": sum(1 for g in outcome.gangs.values() if g.timed_out),
        "reservations": sum(outcome.reservations.values()),
        "unschedulable": [{"pod": p.key, "app": p.app, "queue": p.queue, "user": p.user, "reason": p.reason}
                          for p in unschedulable[:UNSCHEDULABLE_LISTED]],
        "unschedulable_reasons": dict(reasons.most_common()),
        "cluster_usage": root_usage,
        "placements": {queue: keys for queue, keys in sorted(outcome.placements.items())},
        "simulated_seconds": outcome.simulated, "wall_seconds": outcome.wall,
        "speed": outcome.simulated / outcome.wall if outcome.wall else None, "events": outcome.events,
    }


def _leaf_limits(outcome: Outcome):
    paths = set(outcome.queue_limits)
    for path, limits in outcome.queue_limits.items():
        if not any(other.startswith(path + ".") for other in paths):
            yield path, limits


def _fair_share(outcome: Outcome) -> dict[str, tuple[float, float]]:
    total = outcome.total
    limits = dict(outcome.queue_limits)
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for _, queues in outcome.samples:
        leaves = {path: q for path, q in queues.items()
                  if (q[0] or q[1] or q[2] or q[3]) and not any(o.startswith(path + ".") for o in queues)}
        if not leaves:
            continue
        weights = {path: _dominant(limits.get(path, ({}, {}))[0].get("vcore", 0),
                                   limits.get(path, ({}, {}))[0].get("memory", 0), total) for path in leaves}
        if not any(weights.values()):
            weights = dict.fromkeys(leaves, 1.0)
        weight_sum = sum(weights.values())
        for path, (vcore, memory, pending_vcore, pending_memory) in leaves.items():
            share = _dominant(vcore, memory, total)
            demand = _dominant(vcore + pending_vcore, memory + pending_memory, total)
            fair = min(weights[path] / weight_sum, demand)
            entry = sums[path]
            entry[0] += abs(share - fair)
            entry[1] += share - fair
            entry[2] += 1
    return {path: (a / n, s / n) for path, (a, s, n) in sums.items()}


# Files.
def write(reports: dict[str, dict], outcomes: dict[str, Outcome], directory: Path) -> list[Path]:
    """``report.json``, the CSVs and ``report.html`` for one or more runs (named by configuration)."""
    directory.mkdir(parents=True, exist_ok=True)
    single = len(reports) == 1
    document = next(iter(reports.values())) if single else {"configurations": reports}
    written = [directory / "report.json"]
    written[0].write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    written += _csvs(reports, outcomes, directory)
    page = directory / "report.html"
    page.write_text(render_html(reports), encoding="utf-8")
    written.append(page)
    return written


def _csvs(reports: dict[str, dict], outcomes: dict[str, Outcome], directory: Path) -> list[Path]:
    files = []

    def table(name: str, header: list[str], rows) -> None:
        path = directory / name
        with path.open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(header)
            writer.writerows(rows)
        files.append(path)

    scalars = ["pods", "started", "wait_p50", "wait_p95", "wait_p99", "wait_mean", "wait_max", "preempted",
               "preempting", "unschedulable", "fair_share_deviation", "fair_share_excess", "gangs", "gang_wait_p50",
               "gang_wait_p95", "gang_timeouts", "reservations"]
    table("queues.csv", ["config", "queue", *scalars],
          ([config, path, *(q.get(k) for k in scalars)]
           for config, report in reports.items() for path, q in report["queues"].items()))
    user_fields = ["pods", "wait_p50", "wait_p95", "wait_p99", "wait_mean", "wait_max", "preempted", "unschedulable"]
    table("users.csv", ["config", "user", *user_fields],
          ([config, user, *(u.get(k) for k in user_fields)]
           for config, report in reports.items() for user, u in report["users"].items()))
    table("usage.csv", ["config", "time", "queue", "vcore", "memory", "pending_vcore", "pending_memory"],
          ([config, t, path, *values] for config, outcome in outcomes.items()
           for t, queues in outcome.samples for path, values in sorted(queues.items())))
    table("pods.csv", ["config", "pod", "app", "queue", "user", "placeholder", "submit", "start", "end", "wait", "node",
                       "preempted", "reason"],
          ([config, p.key, p.app, p.queue, p.user, p.placeholder, p.submit, p.start, p.end, p.wait, p.node,
            p.preempted, "" if p.start is not None else p.reason]
           for config, outcome in outcomes.items() for p in outcome.pods))
    table("preemptions.csv", ["config", "time", "victim", "victim_app", "victim_queue", "victim_user", "message",
                              "preemptor_queue"],
          ([config, *vars(p).values(), p.preemptor_queue] for config, outcome in outcomes.items()
           for p in outcome.preemptions))
    return files


# The page: inline SVG, no script, no external asset.
COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d"]
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f5}td:first-child,th:first-child{text-align:left}
.cols{display:flex;gap:24px;flex-wrap:wrap}.card{border:1px solid #e4e4e7;border-radius:6px;padding:8px 12px}
.kpi{display:inline-block;margin-right:28px}.kpi b{display:block;font-size:20px}
svg text{font:11px system-ui,sans-serif;fill:#333}.legend span{margin-right:14px}
"""


def _seconds(value) -> str:
    if value is None:
        return "-"
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    if value >= 60:
        return f"{value / 60:.1f}m"
    return f"{value:.1f}s"


def _bars(groups: list[tuple[str, list[tuple[str, float | None]]]], series: list[str], title: str,
          width: int = 640, height: int = 260) -> str:
    """Grouped bars: one group per label, one bar per series (e.g. p50/p95/p99 of each configuration)."""
    values = [v for _, bars in groups for _, v in bars if v is not None]
    top = max(values, default=1.0) or 1.0
    left, bottom, plot_h = 56, 40, height - 70
    group_w = (width - left - 10) / max(1, len(groups))
    bar_w = max(2.0, group_w * 0.8 / max(1, len(series)))
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{left}" y="14" style="font-weight:600">{html.escape(title)}</text>']
    for i in range(5):
        y = 24 + plot_h * i / 4
        parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{_seconds(top * (4 - i) / 4)}</text>')
    for g, (label, bars) in enumerate(groups):
        x0 = left + g * group_w + group_w * 0.1
        for b, (name, value) in enumerate(bars):
            if value is None:
                continue
            h = plot_h * value / top
            parts.append(f'<rect x="{x0 + b * bar_w:.1f}" y="{24 + plot_h - h:.1f}" width="{bar_w - 1:.1f}" '
                         f'height="{h:.1f}" fill="{COLOURS[series.index(name) % len(COLOURS)]}">'
                         f'<title>{html.escape(label)} {html.escape(name)}: {_seconds(value)}</title></rect>')
        parts.append(f'<text x="{left + g * group_w + group_w / 2:.1f}" y="{height - bottom + 28}" '
                     f'text-anchor="middle">{html.escape(label)}</text>')
    parts.append("</svg>")
    legend = "".join(f'<span style="color:{COLOURS[i % len(COLOURS)]}">&#9632; {html.escape(s)}</span>'
                     for i, s in enumerate(series))
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def _lines(series: list[tuple[str, list[tuple[float, float]]]], title: str, unit: str,
           levels: list[tuple[str, float]] = (), width: int = 420, height: int = 200) -> str:
    """Lines over time (usage), with dashed horizontal levels (guaranteed, max)."""
    points = [p for _, s in series for p in s]
    x_max = max((t for t, _ in points), default=1.0) or 1.0
    y_max = max([v for _, v in points] + [v for _, v in levels], default=1.0) or 1.0
    y_max *= 1.05
    left, plot_w, plot_h = 50, width - 60, height - 50

    def xy(t, v):
        return left + plot_w * t / x_max, 22 + plot_h * (1 - v / y_max)

    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{left}" y="14" style="font-weight:600">{html.escape(title)}</text>',
             f'<rect x="{left}" y="22" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ddd"/>',
             f'<text x="{left - 4}" y="26" text-anchor="end">{y_max:.3g}</text>',
             f'<text x="{left - 4}" y="{22 + plot_h}" text-anchor="end">0 {html.escape(unit)}</text>',
             f'<text x="{left}" y="{height - 12}">0</text>',
             f'<text x="{left + plot_w}" y="{height - 12}" text-anchor="end">{_seconds(x_max)}</text>']
    for name, value in levels:
        _, y = xy(0, value)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888" '
                     f'stroke-dasharray="4 3"/><text x="{left + plot_w - 2}" y="{y - 3:.1f}" '
                     f'text-anchor="end">{html.escape(name)}</text>')
    for i, (name, s) in enumerate(series):
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(t, v) for t, v in s))
        parts.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[i % len(COLOURS)]}" '
                     f'stroke-width="1.6"><title>{html.escape(name)}</title></polyline>')
    parts.append("</svg>")
    if len(series) > 1:
        parts.append('<div class="legend">' + "".join(
            f'<span style="color:{COLOURS[i % len(COLOURS)]}">&#9632; {html.escape(name)}</span>'
            for i, (name, _) in enumerate(series)) + "</div>")
    return "<div>" + "".join(parts) + "</div>"


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _number(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _cell(queue: dict, metric: str) -> str:
    value = queue.get(metric)
    return _seconds(value) if metric.startswith("wait") else ("-" if value is None else str(value))


def render_html(reports: dict[str, dict]) -> str:
    names = list(reports)
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>yunikorn-scheduler simulate</title>",
           f"<style>{STYLE}</style></head><body><h1>Simulation report</h1>"]
    out.append('<div class="cols">')
    for name, report in reports.items():
        waits = [p for q in report["queues"].values() for p in [q["wait_p95"]] if p is not None]
        out.append(f'<div class="card"><h3>{html.escape(name)}</h3>'
                   f'<div class="kpi"><b>{_seconds(report["makespan"])}</b>makespan</div>'
                   f'<div class="kpi"><b>{report["utilisation"]:.0%}</b>cpu utilisation</div>'
                   f'<div class="kpi"><b>{report["utilisation_memory"]:.0%}</b>memory utilisation</div>'
                   f'<div class="kpi"><b>{_seconds(max(waits, default=None))}</b>worst queue p95 wait</div>'
                   f'<div class="kpi"><b>{len(report["preemptions"])}</b>preemptions</div>'
                   f'<div class="kpi"><b>{sum(q["unschedulable"] for q in report["queues"].values())}</b>'
                   f'unschedulable pods</div><p>{report["pods"]} pods of {report["applications"]} applications on '
                   f'{report["nodes"]} nodes; {report["gang_timeouts"]} gang timeouts, {report["reservations"]} '
                   f'reservations</p></div>')
    out.append("</div>")
    queues = sorted({q for r in reports.values() for q in r["queues"]})
    if len(names) > 1:
        out.append("<h2>Side by side</h2>" + _table(
            ["queue", *(f"{n} {m}" for m in ("p50", "p95", "p99", "preempted", "unschedulable") for n in names)],
            [[q, *(_cell(reports[n]["queues"].get(q, {}), m) for m in ("wait_p50", "wait_p95", "wait_p99", "preempted",
                                                                       "unschedulable") for n in names)]
             for q in queues]))
    out.append("<h2>Wait time per queue</h2>")
    series = [f"{n} {p}" if len(names) > 1 else p for n in names for p in ("p50", "p95", "p99")]
    groups = [(q, [(f"{n} {p}" if len(names) > 1 else p, reports[n]["queues"].get(q, {}).get(f"wait_{p}"))
                   for n in names for p in ("p50", "p95", "p99")]) for q in queues]
    out.append(_bars(groups, series, "pod wait (s) by queue", width=max(640, 120 * len(queues))))
    out.append("<h2>Usage over time (cpu cores)</h2>")
    for q in queues:
        out.append(f'<h3>{html.escape(q)}</h3><div class="cols">')
        for n in names:
            data = reports[n]["queues"].get(q)
            if data is None:
                continue
            levels = [(label, data[key]["vcore"] / 1000) for label, key in (("guaranteed", "guaranteed"), ("max", "max"))
                      if data.get(key, {}).get("vcore")]
            out.append(_lines([("cores", [(t, v / 1000) for t, v, _ in data["usage"]])], n if len(names) > 1 else q,
                              "cores", levels))
        out.append("</div>")
    out.append('<h2>Cluster</h2><div class="cols">')
    for n in names:
        report = reports[n]
        capacity = report["capacity"]
        usage = report["cluster_usage"]
        series = [("cpu", [(t, v / capacity["vcore"]) for t, v, _ in usage] if capacity.get("vcore") else []),
                  ("memory", [(t, m / capacity["memory"]) for t, _, m in usage] if capacity.get("memory") else [])]
        out.append(_lines(series, f"{n}: allocated / capacity" if len(names) > 1 else "allocated / capacity",
                          "", [("full", 1.0)]))
    out.append("</div>")
    header = ["queue", "pods", "p50", "p95", "p99", "preempted", "unschedulable", "fair-share deviation",
              "gangs", "gang wait p95", "gang timeouts", "reservations"]
    for n in names:
        rows = [[q, d["pods"], _seconds(d["wait_p50"]), _seconds(d["wait_p95"]), _seconds(d["wait_p99"]),
                 d["preempted"], d["unschedulable"], _number(d["fair_share_deviation"]), d["gangs"],
                 _seconds(d["gang_wait_p95"]), d["gang_timeouts"], d["reservations"]]
                for q, d in reports[n]["queues"].items()]
        out.append(f"<h2>Queues{': ' + html.escape(n) if len(names) > 1 else ''}</h2>" + _table(header, rows))
        users = [[u, d["pods"], _seconds(d["wait_p50"]), _seconds(d["wait_p95"]), _seconds(d["wait_p99"]),
                  d["preempted"], d["unschedulable"]] for u, d in reports[n]["users"].items()]
        out.append("<h3>Users</h3>" + _table(["user", "pods", "p50", "p95", "p99", "preempted", "unschedulable"], users))
        preemptions = reports[n]["preemptions"]
        if preemptions:
            out.append(f"<h3>Preemptions ({len(preemptions)}; first 50)</h3>" + _table(
                ["time", "victim", "queue", "user", "for queue", "why"],
                [[_seconds(p["time"]), p["victim"], p["victim_queue"], p["victim_user"], p["preemptor_queue"], p["message"]]
                 for p in preemptions[:50]]))
        reasons = reports[n]["unschedulable_reasons"]
        if reasons:
            out.append("<h3>Unschedulable pods by reason</h3>" + _table(["reason", "pods"],
                                                                       [[r, c] for r, c in reasons.items()]))
    out.append("</body></html>\n")
    return "".join(out)
