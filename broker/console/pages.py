"""The console's HTML: server-rendered pages from broker/console/state.py views and the `ClusterReadModel`, every
text escaped, and an SVG drawing of a partition's segments (clean part, dirty part, active segment, widths by size,
offsets and times in each segment's tooltip). Values are rendered only for the one record a user asked to see. Pure
functions; thread-safe.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

from minikafka.broker.cluster_read_model import NO_LEADER, ClusterReadModel, PartitionLeadership
from minikafka.broker.console.state import GroupLag, KeyLookup, PartitionView, SegmentView, ShareGroupView, TopicView

#: a page from a topic view and the time it shows ("now")
TopicRenderer = Callable[[TopicView, int], bytes]
SVG_WIDTH = 760
SVG_HEIGHT = 60
_MIN_SEGMENT_PX = 8
_GAP_PX = 2
KIND_LABELS = {"clean": "clean (below the cleaner checkpoint)", "dirty": "dirty (not cleaned yet)",
               "active": "active segment (never cleaned)"}


def _bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _clock(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%H:%M:%S")


def _ago(ms: int | None, now_ms: int) -> str:
    if ms is None:
        return "never"
    return f"{_span(now_ms - ms)} ago"


def _span(ms: int) -> str:
    seconds = round(abs(ms) / 1000)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds / 86400:.1f} d"


def _link(path: str, **query: object) -> str:
    return escape(f"{path}?{urlencode({k: v for k, v in query.items() if v is not None})}")


def page(title: str, body: str, *, script: bool = False) -> bytes:
    scripts = '<script src="/static/console.js" defer></script>' if script else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)} · minikafka</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="/static/console.css">{scripts}</head><body>'
        '<header><a href="/" class="brand">minikafka</a> <span>console</span>'
        '<nav><a href="/">topics &amp; groups</a> <a href="/cluster">brokers &amp; leaders</a> '
        '<a href="/metrics">metrics</a></nav></header>'
        f"<main>{body}</main></body></html>\n"
    ).encode()


def front_page(topics: list[TopicView], groups: list[GroupLag], share_groups: list[ShareGroupView],
               now_ms: int, faults: Mapping[str, Any] | None = None, stopped_brokers: Sequence[int] = ()) -> bytes:
    """`faults`: the faults in force (`FaultState.describe()`); a table above the topics while any is set.
    `stopped_brokers`: a line linking to the cluster page while any broker is stopped."""
    rows = []
    for topic in topics:
        status = escape(topic.status) if topic.compacted else '<span class="muted">&#8211;</span>'
        css = _status_class(topic.status)
        rows.append(
            f'<tr data-topic="{escape(topic.name)}"><td><a href="{_link("/topic", name=topic.name)}">'
            f"{escape(topic.name)}</a></td><td class=num>{topic.partitions}</td><td>{escape(topic.policy)}</td>"
            f"<td class=num>{_bytes(topic.size_bytes)}</td><td class=num>{topic.offset_span:,}</td>"
            f'<td class="{css}">{status}</td></tr>')
    topic_table = (
        "<table id=topics><thead><tr><th>topic</th><th>partitions</th><th>cleanup.policy</th><th>size</th>"
        "<th title='log end minus log start offsets: the records of a delete topic, at most the records of a "
        "compacted one'>records (offset span)</th><th>compaction</th></tr></thead><tbody>"
        + ("".join(rows) or "<tr><td colspan=6 class=muted>no topics yet</td></tr>") + "</tbody></table>")
    group_rows = []
    for group in groups:
        detail = ", ".join(f"{escape(t)}-{p}: {lag:,}" for t, p, _c, lag in group.partitions) or "no offsets"
        group_rows.append(
            f'<tr data-group="{escape(group.group_id)}"><td>{escape(group.group_id)}</td><td>{escape(group.group_type)}'
            f"</td><td>{escape(group.state)}</td><td class=num>{group.lag:,}</td><td class=small>{detail}</td></tr>")
    group_table = (
        "<table id=groups><thead><tr><th>group</th><th>type</th><th>state</th><th>lag</th><th>per partition</th>"
        "</tr></thead><tbody>"
        + ("".join(group_rows) or "<tr><td colspan=5 class=muted>no consumer groups</td></tr>") + "</tbody></table>")
    stopped = (f'<p class=bad id=stopped-brokers>broker(s) {", ".join(map(str, stopped_brokers))} stopped: see '
               '<a href="/cluster">brokers &amp; leaders</a></p>' if stopped_brokers else "")
    body = (f"{_faults_table(faults)}{stopped}<h1>Topics</h1>{topic_table}<h1>Consumer groups</h1>{group_table}"
            f"<h1>Share groups</h1>{_share_group_table(share_groups)}"
            f'<p class="muted small">as of {_time(now_ms)}</p>')
    return page("topics", body)


def _faults_table(faults: Mapping[str, Any] | None) -> str:
    """The wire-level faults in force (broker/faults), one row each; nothing at all while none is set."""
    if not faults:
        return ""

    def requests(fault: Mapping[str, Any]) -> str:
        return (f"{fault['api']} requests" + (f" to broker {fault['broker']}" if fault["broker"] is not None else "")
                + (f" from client ids containing {fault['client_id']!r}" if fault["client_id"] else ""))

    rows = [("push_request_errors", requests(pushed), "answered " + ", ".join(pushed["errors"]))
            for pushed in faults["push_request_errors"]]
    rows += [("push_request_errors", f"{stale['api']} requests to broker {stale['broker']} from client id "
              f"{stale['client_id']!r}", f"answered {stale['error']} until that client's next Metadata request")
             for stale in faults.get("stale_metadata", ())]
    rows += [("set_rtt", f"responses of broker {broker}", f"held back {rtt_ms} ms")
             for broker, rtt_ms in faults["rtt_ms"].items()]
    rows += [("disconnect_on", requests(disconnect), f"served, then the connection closes ({disconnect['count']} more)")
             for disconnect in faults["disconnect_on"]]
    rows += [("blackhole", f"requests from client ids containing {client_id!r}", "no response, not served")
             for client_id in faults["blackhole"]]
    if not rows:
        return ""
    return ("<h1>Faults in force</h1><table id=faults><thead><tr><th>fault</th><th>applies to</th><th>effect</th>"
            "</tr></thead><tbody>"
            + "".join(f'<tr class=warn><td>{escape(name)}</td><td>{escape(target)}</td><td>{escape(effect)}</td></tr>'
                      for name, target, effect in rows)
            + "</tbody></table><p class='muted small'>minikafka faults clear-faults (or faults.clear_faults()) ends "
              "them.</p>")


def _share_group_table(share_groups: list[ShareGroupView]) -> str:
    rows = []
    for group in share_groups:
        members = ", ".join(f'<span title="{escape(member_id)}">{escape(client_id or member_id)}@{escape(host)}'
                            "</span>" for member_id, client_id, host in group.members) or "none"
        detail = ", ".join(
            f"{escape(topic)}-{partition}: start {start:,}, {in_flight:,} in flight, {archived:,} archived"
            for topic, partition, start, in_flight, archived in group.partitions) or "not read yet"
        css = "warn" if group.archived else ""
        rows.append(
            f'<tr data-share-group="{escape(group.group_id)}"><td>{escape(group.group_id)}</td>'
            f"<td>{escape(group.state)}</td><td class='num members'>{len(group.members)}</td>"
            f"<td class=small>{members}</td><td class='num in-flight'>{group.in_flight:,}</td>"
            f"<td class='num archived {css}'>{group.archived:,}</td><td class=small>{detail}</td></tr>")
    return (
        "<table id=share-groups><thead><tr><th>group</th><th>state</th><th>members</th><th>clients</th>"
        "<th title='available or acquired records between the share-partition start offset and its end'>in flight"
        "</th><th title='rejected, over share.delivery.count.limit, or aborted (read_committed)'>archived</th>"
        "<th>per partition</th></tr></thead><tbody>"
        + ("".join(rows) or "<tr><td colspan=7 class=muted>no share groups</td></tr>") + "</tbody></table>")


def _status_class(status: str) -> str:
    if status.startswith(("overdue", "cleaning failed")):
        return "bad"
    if status.startswith("cleaning due"):
        return "warn"
    return "ok" if status else ""


def topic_page(topic: TopicView, now_ms: int) -> bytes:
    config = (f"cleanup.policy={escape(topic.policy)} · min.cleanable.dirty.ratio={topic.min_cleanable_dirty_ratio:g}"
              f" · min.compaction.lag.ms={topic.min_compaction_lag_ms}"
              f" · max.compaction.lag.ms={_lag(topic.max_compaction_lag_ms)}"
              f" · delete.retention.ms={topic.delete_retention_ms}")
    lookup = (
        f'<form id=key-lookup action="/key" method="get"><input type=hidden name=topic value="{escape(topic.name)}">'
        '<label>key <input name=key id=key-input placeholder="a key (string)"></label> '
        '<label><input type=checkbox name=hex value=1 id=key-hex> hex</label> '
        "<button type=submit>look up</button></form>")
    body = (f"<h1>{escape(topic.name)}</h1><p class=small>{config}</p>"
            f'<div id=live data-topic="{escape(topic.name)}" data-src="{_link("/topic/live", name=topic.name)}">'
            f"{topic_live(topic, now_ms).decode()}</div>"
            f"<h2>Key lookup</h2>{lookup}")
    return page(topic.name, body, script=True)


def _lag(ms: int) -> str:
    return "not set" if ms >= 2**63 - 1 else str(ms)


def topic_live(topic: TopicView, now_ms: int) -> bytes:
    """The part of the topic page the script refreshes: the partition table and the segment drawings."""
    rows, drawings = [], []
    for p in topic.partition_views:
        rows.append(
            f'<tr data-partition="{p.partition}"><td class=num>{p.partition}</td>'
            f"<td class=num>{p.log_start_offset:,}</td><td class='num end-offset'>{p.log_end_offset:,}</td>"
            f"<td class='num checkpoint'>{_offset(p.checkpoint_offset)}</td>"
            f"<td class=num>{_ratio(p, topic.min_cleanable_dirty_ratio)}</td><td>{_deadline(p, topic, now_ms)}</td>"
            f"<td>{_ago(p.last_clean_ms, now_ms)}</td>"
            f"<td class=num>{p.records_removed:,} records / {_bytes(p.bytes_removed)}</td>"
            f"<td class=num>{p.tombstones_pending:,}"
            + (f" <span class=small>(removable {_time(p.tombstone_horizon_ms)})</span>"
               if p.tombstones_pending and p.tombstone_horizon_ms else "")
            + "</td>" + (f"<td class=bad>{escape(p.failure)}</td>" if p.failure else "<td class=ok>ok</td>") + "</tr>")
        drawings.append(f"<h3>partition {p.partition}</h3>{segment_svg(p)}")
    table = ("<table id=partitions><thead><tr><th>partition</th><th>log start</th><th>log end</th>"
             "<th>cleaner checkpoint</th><th>dirty ratio</th><th>KIP-354 deadline</th><th>last cleaning round</th>"
             "<th>removed (all rounds)</th><th>tombstones pending</th><th>cleaning</th></tr></thead><tbody>"
             + "".join(rows) + "</tbody></table>")
    legend = "".join(f'<span class="legend {kind}">{label}</span>' for kind, label in KIND_LABELS.items())
    return (f"{table}<h2>Segments</h2><p class=small>{legend}</p>{''.join(drawings)}"
            f'<p class="muted small" id=updated>updated {_time(now_ms)}</p>').encode()


def _offset(offset: int | None) -> str:
    return "&#8211;" if offset is None else f"{offset:,}"


def _ratio(p: PartitionView, min_ratio: float) -> str:
    if p.dirty_ratio is None:
        return "&#8211;"
    mark = "≥" if p.dirty_ratio >= min_ratio else "<"
    css = "warn" if p.dirty_ratio >= min_ratio and p.dirty_ratio > 0 else ""
    return f'<span class="{css}">{p.dirty_ratio:.0%} {mark} {min_ratio:g}</span>'


def _deadline(p: PartitionView, topic: TopicView, now_ms: int) -> str:
    if not topic.compacted:
        return '<span class=muted>not compacted</span>'
    if p.deadline_ms is None:
        return ('<span class=muted>none (max.compaction.lag.ms not set)</span>'
                if topic.max_compaction_lag_ms >= 2**63 - 1 else '<span class=muted>nothing dirty</span>')
    left = p.deadline_ms - now_ms
    return (f'<span class=ok>{_span(left)} left</span>' if left > 0
            else f'<span class=bad>overdue by {_span(left)}</span>')


def segment_svg(p: PartitionView) -> str:
    """Segments left to right, widths by size (at least a sliver each); one rect per segment with its data."""
    segments = p.segments
    if not segments:
        return '<p class=muted>no segments</p>'
    usable = SVG_WIDTH - _GAP_PX * (len(segments) - 1)
    total = sum(max(s.size_bytes, 1) for s in segments)
    widths = [max(_MIN_SEGMENT_PX, usable * max(s.size_bytes, 1) / total) for s in segments]
    scale = usable / sum(widths)
    parts, x = [], 0.0
    for segment, width in zip(segments, widths, strict=True):
        width *= scale
        parts.append(_segment_rect(segment, x, width))
        x += width + _GAP_PX
    return (f'<svg class=segments data-partition="{p.partition}" width="{SVG_WIDTH}" height="{SVG_HEIGHT}" '
            f'viewBox="0 0 {SVG_WIDTH} {SVG_HEIGHT}" role="img" aria-label="segments of partition {p.partition}">'
            + "".join(parts) + "</svg>")


def _segment_rect(segment: SegmentView, x: float, width: float) -> str:
    title = (f"{KIND_LABELS[segment.kind]}\noffsets {segment.base_offset:,} to {segment.end_offset - 1:,}"
             f"\n{_bytes(segment.size_bytes)}\n{_time(segment.first_timestamp_ms)} to "
             f"{_time(segment.last_timestamp_ms)}")
    label = ""
    if width > 70:
        label = (f'<text x="{x + 4:.1f}" y="18">{segment.base_offset:,}</text>'
                 f'<text x="{x + 4:.1f}" y="34" class=size>{_bytes(segment.size_bytes)}</text>')
    if width > 130 and segment.first_timestamp_ms is not None and segment.last_timestamp_ms is not None:
        label += (f'<text x="{x + 4:.1f}" y="50" class=size>{_clock(segment.first_timestamp_ms)} to '
                  f'{_clock(segment.last_timestamp_ms)}</text>')
    return (f'<g class="segment {segment.kind}" data-kind="{segment.kind}" data-base-offset="{segment.base_offset}" '
            f'data-end-offset="{segment.end_offset}" data-size-bytes="{segment.size_bytes}">'
            f'<title>{escape(title)}</title><rect x="{x:.1f}" y="2" width="{width:.1f}" height="{SVG_HEIGHT - 4}" '
            f'rx="3"></rect>{label}</g>')


def key_page(lookup: KeyLookup, key_text: str, is_hex: bool) -> bytes:
    shown = escape(key_text)
    base = {"topic": lookup.topic, ("key_hex" if is_hex else "key"): key_text, "partition": lookup.partition}
    rows = []
    for record in lookup.records:
        size = "tombstone (null value)" if record.value_bytes < 0 else _bytes(record.value_bytes)
        reveal = "" if record.value_bytes < 0 else (
            f'<a class=reveal href="{_link("/key", **base, show=record.offset)}">show value</a>')
        rows.append(
            f'<tr data-offset="{record.offset}" data-file="{escape(record.file)}"><td class=num>{record.offset:,}</td>'
            f"<td>{_time(record.timestamp_ms)}</td><td class=num>{size}</td><td class=small>{escape(record.file)}"
            f"</td><td class=small>{escape(lookup.gone_by.get(record.offset, ''))}</td><td>{reveal}</td></tr>")
    table = ("<table id=key-records><thead><tr><th>offset</th><th>timestamp</th><th>value</th><th>file</th>"
             "<th>when it is gone</th><th></th></tr></thead><tbody>"
             + ("".join(rows) or "<tr><td colspan=6 class=muted>no record of this key on disk</td></tr>")
             + "</tbody></table>")
    value = ""
    if lookup.value_offset is not None:
        if lookup.value is None:
            value = f"<p class=muted>offset {lookup.value_offset:,} holds no value of this key</p>"
        else:
            try:
                text = escape(lookup.value.decode())
            except UnicodeDecodeError:
                text = "hex: " + lookup.value.hex()
            value = f"<h2>Value at offset {lookup.value_offset:,}</h2><pre id=value>{text}</pre>"
    body = (f'<h1>Key <code>{shown}</code>{" (hex)" if is_hex else ""} in '
            f'<a href="{_link("/topic", name=lookup.topic)}">{escape(lookup.topic)}</a></h1>'
            f"<p>It hashes to partition <b id=key-partition>{lookup.partition}</b> (Kafka's default partitioner); "
            f"{len(lookup.files)} segment file(s) read. Values stay hidden unless you ask for one.</p>"
            f"{table}{value}")
    return page(f"key in {lookup.topic}", body)


def cluster_page(model: ClusterReadModel, now_ms: int, internal: bool) -> bytes:
    """The brokers and partition leadership; `internal` also lists the internal topics' partitions."""
    switch = ('<a href="/cluster">hide internal topics</a>' if internal
              else f'<a href="{_link("/cluster", internal=1)}">show internal topics</a>')
    live = _link("/cluster/live", internal=1 if internal else None).removesuffix("?")
    body = (f"<h1>Brokers</h1><div id=live data-src=\"{live}\">{cluster_live(model, now_ms).decode()}</div>"
            f"<p class=small>{switch}. Stop and start brokers, elect leaders and move coordinators with the faults "
            "(<code>minikafka faults</code>, <code>MiniKafka.faults</code> or <code>POST /admin/faults/...</code>); "
            "this page follows them.</p>")
    return page("brokers", body, script=True)


def cluster_live(model: ClusterReadModel, now_ms: int) -> bytes:
    """The part of the cluster page the script refreshes: brokers, partitions (leader, epoch, replicas, ISR, ELR)
    and coordinators."""
    brokers = []
    for broker in model.brokers:
        state = "<td class='state ok'>running</td>" if broker.running else "<td class='state bad'>stopped</td>"
        brokers.append(
            f'<tr data-broker="{broker.node_id}" data-running="{str(broker.running).lower()}">'
            f"<td class=num>{broker.node_id}</td><td class=small>{'<br>'.join(map(escape, broker.listeners))}</td>"
            f"{state}<td>{'controller' if broker.controller else ''}</td>"
            f"<td class='num leads'>{broker.leader_of:,}</td><td class=num>{broker.replica_of:,}</td></tr>")
    broker_table = ("<table id=brokers><thead><tr><th>broker</th><th>listeners (advertised)</th><th>state</th>"
                    "<th></th><th>leads</th><th>replica of</th></tr></thead><tbody>" + "".join(brokers)
                    + "</tbody></table>")
    rows = [_leadership_row(p) for p in model.partitions]
    partition_table = (
        "<table id=replicas><thead><tr><th>topic</th><th>partition</th><th>leader</th><th>leader epoch</th>"
        "<th>replicas</th><th>ISR</th><th title='KIP-966 eligible leader replicas: they left an ISR smaller than "
        "min.insync.replicas and hold every committed record'>ELR</th><th>offline replicas</th></tr></thead><tbody>"
        + ("".join(rows) or "<tr><td colspan=8 class=muted>no partitions yet</td></tr>") + "</tbody></table>")
    coordinator_rows = [
        f'<tr data-kind="{escape(c.kind)}" data-key="{escape(c.key)}"><td>{escape(c.kind)}</td><td>{escape(c.key)}'
        f"</td><td>{escape(c.topic)}{'' if c.partition is None else f'-{c.partition}'}</td>"
        f"<td class='num coordinator{'' if c.coordinator != NO_LEADER else ' bad'}'>"
        f"{c.coordinator if c.coordinator != NO_LEADER else 'none'}</td></tr>" for c in model.coordinators]
    coordinator_table = (
        "<table id=coordinators><thead><tr><th>coordinator of</th><th>id</th><th>internal partition</th>"
        "<th>broker</th></tr></thead><tbody>"
        + ("".join(coordinator_rows) or "<tr><td colspan=4 class=muted>no groups or transactional ids</td></tr>")
        + "</tbody></table>")
    running = sum(1 for b in model.brokers if b.running)
    return (f"<p class=small id=broker-count>{len(model.brokers)} broker(s), {running} running</p>{broker_table}"
            f"<h1>Partition leaders</h1>{partition_table}<h1>Coordinators</h1>{coordinator_table}"
            f'<p class="muted small" id=updated>updated {_time(now_ms)}</p>').encode()


def _ids(ids: tuple[int, ...]) -> str:
    return ", ".join(map(str, ids)) if ids else "&#8211;"


def _leadership_row(p: PartitionLeadership) -> str:
    css = "bad" if p.leader == NO_LEADER else "warn" if p.under_replicated else ""
    elr = _ids(p.elr) if p.elr or not p.last_known_elr else f"last known: {_ids(p.last_known_elr)}"
    return (f'<tr data-topic="{escape(p.topic)}" data-partition="{p.partition}"{f" class={css}" if css else ""}>'
            f"<td>{escape(p.topic)}</td><td class=num>{p.partition}</td>"
            f"<td class='num leader'>{p.leader if p.leader != NO_LEADER else 'none'}</td>"
            f"<td class='num epoch'>{p.leader_epoch}</td><td class=replicas>{_ids(p.replicas)}</td>"
            f"<td class=isr>{_ids(p.isr)}</td><td class=elr>{elr}</td><td class=offline>{_ids(p.offline)}</td></tr>")


def message_page(title: str, message: str) -> bytes:
    return page(title, f"<h1>{escape(title)}</h1><p>{escape(message)}</p>")
