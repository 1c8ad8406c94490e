#!/usr/bin/env python3
"""Writes docs/cost.md: what clicks, postbacks, API reads and webhook
deliveries cost on AWS at list prices, from refbench's own counts.

Usage: scripts/cost.py [--input FILE ...] [--output docs/cost.md]
                       [--clicks N] [--conversions N] [--api-reads N]
                       [--webhook-deliveries N] [--payouts N] [--receiver-ms MS]
                       [--stripe-ms MS]

`make bench` (scripts/bench.sh) saves each refbench section's stdout under
target/bench/ and runs this script at the end. The inputs are:

- target/bench/refbench.txt: the default section (`refbench` without an
  argument): per API operation, DynamoDB calls, sequential round trips,
  read units and write units;
- target/bench/load.txt: `refbench load`: requests a second through the
  local host at a stated concurrency (the duration estimates come from it);
- target/bench/rails.txt: `refbench rails`: batch-process paying through the
  Stripe rail (the "instead of mark-paid" line).

Any number of --input files may be given (a single file holding the whole
`make bench` output works too): the tables are looked for in all of them.
template.yaml gives each function's memory, its routes, its schedule and
whether it may call S3. The only figures typed in here are AWS list prices,
the competitors' published plan prices (both marked as such), the scenario's
stated assumptions, and the webhook delivery's DynamoDB work, which refbench
does not measure (WEBHOOK_DELIVERY below, modelled from the code and said so
in the document). A row this script needs that is missing from the input is
an error (exit status 2), so a renamed refbench row cannot turn into zeros.

Python 3 standard library only.
"""

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# --------------------------------------------------------------------------
# AWS list prices, us-east-1, in USD: list prices as of 2026-11, from the
# pricing pages named beside each (not fetched by this script; the DynamoDB
# on-demand prices are those of the 2024-11 price cut). Free tiers are
# ignored throughout.
# --------------------------------------------------------------------------

# https://aws.amazon.com/lambda/pricing/ (Arm, first 6 billion GB-s a month)
LAMBDA_ARM_PER_GB_SECOND = 0.0000133334
LAMBDA_PER_MILLION_REQUESTS = 0.20
# https://aws.amazon.com/api-gateway/pricing/ (HTTP APIs, first 300 million a month)
HTTP_API_PER_MILLION_REQUESTS = 1.00
# https://aws.amazon.com/dynamodb/pricing/on-demand/
DYNAMODB_PER_MILLION_WRITE_UNITS = 0.625
DYNAMODB_PER_MILLION_READ_UNITS = 0.125
# Same page, "DynamoDB Streams": $0.02 per 100,000 streams read request
# units (one per GetRecords call); GetRecords calls made by a Lambda trigger
# are not charged.
DYNAMODB_STREAMS_PER_100K_READS = 0.02
# https://aws.amazon.com/s3/pricing/ (S3 Standard requests)
S3_PER_1K_PUT = 0.005
S3_PER_1K_GET = 0.0004
# https://aws.amazon.com/cloudwatch/pricing/ (Logs, Standard class ingestion;
# Lambda's logs are billed in this tier up to 10 TB a month)
CLOUDWATCH_LOGS_PER_GB_INGESTED = 0.50
CLOUDWATCH_LOGS_PER_GB_MONTH_STORED = 0.03
# https://aws.amazon.com/secrets-manager/pricing/
SECRETS_MANAGER_PER_SECRET_MONTH = 0.40

# Pricing rules, not prices (same pages): a transactional write costs two
# write units per KB, a non-transactional one one; an eventually consistent
# read of up to 4 KB (every read of a global secondary index) costs half a
# read unit, and a Query that finds nothing still costs that half unit.
TRANSACTIONAL_WRITE_FACTOR = 2
EVENTUALLY_CONSISTENT_MIN_READ = 0.5
# CloudWatch Logs counts each log event as its message bytes plus 26 bytes
# (the PutLogEvents size rule); counted here as ingested bytes too, which
# errs high if billing leaves them out.
CLOUDWATCH_EVENT_OVERHEAD_BYTES = 26
BYTES_PER_GB = 1024 ** 3
# AWS's pricing examples count 730 hours a month.
HOURS_PER_MONTH = 730

# --------------------------------------------------------------------------
# Hosted competitors: external list prices, typed in, as published on each
# vendor's pricing page. Not re-fetched by this script: check the page
# before quoting. Entry plan, billed monthly, USD a month; None when the
# vendor publishes no price.
# --------------------------------------------------------------------------
COMPETITORS_AS_OF = "2026-11-25"
COMPETITORS = [
    ("Rewardful", "Starter", 49, "https://www.rewardful.com/pricing",
     "caps the affiliate revenue it tracks; higher tiers above"),
    ("Tolt", "Basic", 69, "https://tolt.com/pricing",
     "caps the monthly revenue earned from affiliates"),
    ("FirstPromoter", "Starter", 89, "https://firstpromoter.com/pricing",
     "caps the number of affiliates"),
    ("PartnerStack", "(sales-led)", None, "https://partnerstack.com/pricing",
     "no published price: annual contract through sales, plus a fee on partner payouts"),
    ("Dub", "Business", 90, "https://dub.co/pricing",
     "the entry plan that includes Dub Partners (affiliate programmes)"),
]

# --------------------------------------------------------------------------
# The webhook delivery's DynamoDB work, which refbench does not measure
# (no row): modelled from the code, and said so in the document.
# services/src/webhooks.rs first_attempt -> attempt:
#   store::put_task        TransactWriteItems: the task (PENDING, with its
#                          GSI5 retry entry until the attempt is recorded)
#   (the signed POST)
#   store::record_outcome  TransactWriteItems: the task again (its GSI5
#                          entry removed) and the attempt record (GSI1 and
#                          GSI2 entries)
# Each item assumed under 1 KB (a receiver answering with a long body fills
# the attempt's 1 KB response excerpt: 2 more write units). Index entries
# are written by DynamoDB outside the transaction: one unit each.
# The stream consumer's own Query of the tenant's endpoints (GSI1) runs once
# per event whatever the endpoints: it is priced with the postback.
# --------------------------------------------------------------------------
WEBHOOK_DELIVERY = {
    "round_trips": 2,
    "transactional_item_writes": 3,  # task, task, attempt
    "index_entry_writes": 4,  # GSI5 put, GSI5 removed, GSI1, GSI2
    "read_units": 0.0,
}
EVENT_CONSUMER = {
    "round_trips": 1,  # store::all_endpoints: one Query page
    "queries": 1,
}


class InputError(Exception):
    """A needed row, table or file is missing or malformed."""


# --------------------------------------------------------------------------
# refbench output
# --------------------------------------------------------------------------

@dataclass
class Row:
    name: str
    calls: int
    round_trips: int
    read_units: float
    write_units: float
    # What DynamoDB bills, metered by refbench from the items written
    # (write_units.rs); None in an output without that column.
    billed: float = None


def tables(text):
    """Markdown tables in `text`: a list of (header cells, rows of cells)."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.startswith("|") and nxt.startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(lines[i].strip())
                i += 1
            found.append((header, rows))
        else:
            i += 1
    return found


def number(cell, what):
    try:
        return float(cell.replace(",", "").rstrip("%"))
    except ValueError:
        raise InputError(f"{what}: '{cell}' is not a number") from None


def operation_rows(text):
    """refbench's operations table (main.rs prints it:
    `| {name} | {calls} | {trips} | {r:.1} | {w:.1} | {billed} |`, the
    billed write units `-` where not metered)."""
    rows = []
    for header, lines in tables(text):
        if header[:2] != ["operation", "DynamoDB calls"]:
            continue
        n = 5 if header[-1] == "write units billed" else 4
        for line in lines:
            cells = line.strip("|").split("|")
            if len(cells) < n + 1:
                raise InputError(f"operations table: malformed row: {line}")
            name = "|".join(cells[:-n]).strip()
            calls, trips, r, w = (c.strip() for c in cells[-n:][:4])
            billed = cells[-1].strip() if n == 5 else "-"
            rows.append(Row(name, int(number(calls, name)), int(number(trips, name)),
                            number(r, name), number(w, name),
                            None if billed == "-" else number(billed, name)))
    return rows


def load_rates(text):
    """`refbench load`: the concurrency and each request's API rate (load.rs
    prints `| {name} | {api:.0} | {raw:.0} | {ratio:.0}% |`)."""
    m = re.search(r"Throughput through the local host: (\d+) clients at a time", text)
    rates = {}
    for header, lines in tables(text):
        if header[:2] != ["requests", "API per second"]:
            continue
        for line in lines:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) != 4:
                raise InputError(f"load table: malformed row: {line}")
            rates[cells[0]] = number(cells[1], cells[0])
    if not rates:
        return None, rates
    if not m:
        raise InputError("load section: the 'Throughput through the local host: N clients "
                         "at a time' line (the concurrency) is missing")
    return int(m.group(1)), rates


def find_row(rows, prefix, what):
    """The one row whose name starts with `prefix`."""
    hits = [r for r in rows if r.name.startswith(prefix)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError(f"{what}: no refbench row starting with '{prefix}'")
    names = "; ".join(f"'{r.name}'" for r in hits)
    raise InputError(f"{what}: {len(hits)} refbench rows start with '{prefix}' ({names})")


def find_rate(rates, name, what):
    if name not in rates:
        known = ", ".join(f"'{k}'" for k in rates) or "none"
        raise InputError(f"{what}: no load row '{name}' (rows: {known})")
    if rates[name] <= 0:
        raise InputError(f"{what}: load row '{name}' has no positive rate")
    return rates[name]


# --------------------------------------------------------------------------
# template.yaml (a plain text reading of the parts used: no YAML library)
# --------------------------------------------------------------------------

@dataclass
class Function:
    name: str
    binary: str = ""
    memory_mb: int = 0
    routes: list = field(default_factory=list)  # (method, path)
    schedules: list = field(default_factory=list)  # rate expressions
    stream_consumer: bool = False
    s3_actions: list = field(default_factory=list)


@dataclass
class Template:
    functions: dict
    log_format: str
    secrets: int
    log_groups_with_retention: int


def indent(line):
    return len(line) - len(line.lstrip(" "))


def read_template(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    section = None
    globals_memory = None
    log_format = None
    functions = {}
    types = {}
    retention = 0
    current = None
    in_events = False
    event_type = None
    for raw in lines:
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        ind = indent(raw)
        line = raw.strip()
        if ind == 0:
            section = line.rstrip(":")
            current = None
            continue
        if section == "Globals":
            m = re.match(r"MemorySize:\s*(\d+)", line)
            if m and ind == 4:
                globals_memory = int(m.group(1))
            m = re.match(r"LogFormat:\s*(\w+)", line)
            if m:
                log_format = m.group(1)
            continue
        if section != "Resources":
            continue
        if ind == 2 and line.endswith(":"):
            current = line[:-1]
            types[current] = None
            in_events = False
            continue
        if current is None:
            continue
        if ind == 4 and line.startswith("Type:"):
            types[current] = line.split(":", 1)[1].strip()
            if types[current] == "AWS::Serverless::Function":
                functions[current] = Function(current)
            continue
        if "RetentionInDays" in line:
            retention += 1
        fn = functions.get(current)
        if fn is None:
            continue
        m = re.match(r"Binary:\s*(\S+)", line)
        if m:
            fn.binary = m.group(1)
        m = re.match(r"MemorySize:\s*(\d+)", line)
        if m and ind == 6:
            fn.memory_mb = int(m.group(1))
        m = re.match(r"-\s*(s3:\w+)", line)
        if m:
            fn.s3_actions.append(m.group(1))
        if ind == 6:
            in_events = line == "Events:"
            continue
        if not in_events:
            continue
        if ind == 8:
            event_type = None
            continue
        m = re.match(r"Type:\s*(\w+)", line)
        if m and ind == 10:
            event_type = m.group(1)
            if event_type == "DynamoDB":
                fn.stream_consumer = True
            continue
        if event_type == "HttpApi":
            mm = re.search(r"Method:\s*(\w+)", line)
            mp = re.search(r"Path:\s*(?:\"([^\"]+)\"|([^,}\s]+))", line)
            if mm and mp:
                fn.routes.append((mm.group(1).upper(), mp.group(1) or mp.group(2)))
        m = re.match(r"Schedule:\s*(rate\([^)]*\))", line)
        if m:
            fn.schedules.append(m.group(1))
    if globals_memory is None:
        raise InputError(f"{path}: no Globals Function MemorySize")
    for fn in functions.values():
        if not fn.memory_mb:
            fn.memory_mb = globals_memory
    if not functions:
        raise InputError(f"{path}: no AWS::Serverless::Function")
    secrets = sum(1 for t in types.values() if t == "AWS::SecretsManager::Secret")
    return Template(functions, log_format or "Text", secrets, retention)


def route_function(template, method, path):
    """The function serving `method path` (path as refbench names it,
    without /api/v1), and the template's full route."""
    hits = [(fn, p) for fn in template.functions.values() for (m, p) in fn.routes
            if m == method and p.endswith(path) and p[: -len(path)].count("/") <= 2
            and "{" not in p[: -len(path)]]
    if len(hits) != 1:
        raise InputError(f"template.yaml: {len(hits)} routes match {method} {path} (want 1)")
    return hits[0]


def function_where(template, what, test):
    hits = [fn for fn in template.functions.values() if test(fn)]
    if len(hits) != 1:
        raise InputError(f"template.yaml: {len(hits)} functions are {what} (want 1)")
    return hits[0]


def runs_per_month(rate):
    m = re.fullmatch(r"rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)", rate)
    if not m:
        raise InputError(f"template.yaml: schedule '{rate}' is not a rate(...) this script reads")
    n, unit = int(m.group(1)), m.group(2).rstrip("s")
    minutes = {"minute": 1, "hour": 60, "day": 1440}[unit] * n
    return HOURS_PER_MONTH * 60 / minutes


def work_shards(path):
    with open(path, encoding="utf-8") as f:
        m = re.search(r"pub const WORK_SHARDS: u32 = (\d+);", f.read())
    if not m:
        raise InputError(f"{path}: no `pub const WORK_SHARDS: u32 = N;`")
    return int(m.group(1))


# --------------------------------------------------------------------------
# Log lines, in the shapes the functions write them: tracing-subscriber's
# JSON format as services::app::init_tracing sets it up (current span, no span
# list, no target), and Lambda's JSON system log lines (LogFormat: JSON; at
# the default INFO system level, platform.start and platform.report per
# invocation). Ids have their real lengths; numbers their usual widths.
# --------------------------------------------------------------------------

ULID = "01JD8Z3K4M5N6P7Q8R9S0T1V2W"
UUID = "3f1c2a9e-6b7d-4e21-9a0b-5c8d7e6f1a2b"
XRAY = "Root=1-6744a1b2-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=0;Lineage=1:a1b2c3d4:0"
TIMESTAMP = "2026-11-25T12:34:56.123456Z"
LAMBDA_TIME = "2026-11-25T12:34:56.123Z"


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def app_line(message, fields, span):
    return compact({"timestamp": TIMESTAMP, "level": "INFO",
                    "fields": {"message": message, **fields}, "span": span})


def request_line(method, route, status, keyed, duration_ms):
    """api::http::layer::envelope's line, in its `request` span."""
    return app_line("request", {
        "method": method, "route": route, "status": status,
        "account": f"acct_{ULID}" if keyed else "-",
        "duration_ms": int(duration_ms)},
        {"request_id": f"req_{ULID}", "name": "request"})


def runtime_span():
    """lambda_runtime's per-invocation span (the current span outside
    the HTTP functions' own)."""
    return {"requestId": UUID, "xrayTraceId": XRAY, "name": "Lambda runtime invoke"}


def webhook_attempt_line(duration_ms):
    """services::webhooks::attempt's line."""
    return app_line("webhook attempt", {
        "event_id": f"evt_{ULID}", "endpoint_id": f"whe_{ULID}", "attempt": 1,
        "status": "SUCCEEDED", "response_status": 200, "duration_ms": int(duration_ms)},
        runtime_span())


def sweep_line():
    """functions/webhooks/src/bin/webhook-sweep.rs's line, nothing due."""
    return app_line("webhook sweep", {"attempted": 0, "abandoned": 0, "skipped": 0},
                    runtime_span())


def payout_job_line():
    """functions/payout-job/src/main.rs's line, nothing due."""
    report = compact({"approved": 0, "payoutsCreated": 0, "claimed": 0,
                      "poolsBelowMinimum": 0, "payoutsCompleted": 0,
                      "paymentsRetried": 0, "cutShort": False})
    return app_line("payout job run", {"report": report}, runtime_span())


def invocation_lines(log_format, memory_mb, duration_ms, inner=()):
    """An invocation's lines: what Lambda itself writes around the
    function's own (`inner`)."""
    billed = math.ceil(duration_ms)
    if log_format == "JSON":
        return [
            compact({"time": LAMBDA_TIME, "type": "platform.start",
                     "record": {"requestId": UUID, "version": "$LATEST"}}),
            *inner,
            compact({"time": LAMBDA_TIME, "type": "platform.report",
                     "record": {"requestId": UUID, "metrics": {
                         "durationMs": round(duration_ms, 3), "billedDurationMs": billed,
                         "memorySizeMB": memory_mb, "maxMemoryUsedMB": 21},
                         "status": "success"}}),
        ]
    return [
        f"START RequestId: {UUID} Version: $LATEST",
        *inner,
        f"END RequestId: {UUID}",
        f"REPORT RequestId: {UUID}\tDuration: {duration_ms:.2f} ms\tBilled Duration: "
        f"{billed} ms\tMemory Size: {memory_mb} MB\tMax Memory Used: 21 MB\t",
    ]


def log_bytes(lines):
    return sum(len(line.encode("utf-8")) + CLOUDWATCH_EVENT_OVERHEAD_BYTES for line in lines)


# --------------------------------------------------------------------------
# Usage and cost of one operation
# --------------------------------------------------------------------------

@dataclass
class Usage:
    label: str
    source: str = ""  # where the DynamoDB figures come from
    api_requests: float = 0
    # Lambda invocations of its own: (function, memory MB, ms each, count).
    invocations: list = field(default_factory=list)
    # Time spent inside another invocation (billed, no request of its own):
    # (function, memory MB, ms each, count).
    riding: list = field(default_factory=list)
    read_units: float = 0
    write_units_reported: float = 0
    write_units: float = 0  # priced
    stream_reads: float = 0
    s3_puts: float = 0
    s3_gets: float = 0
    log_lines: float = 0
    log_bytes: float = 0
    calls: str = ""

    def lambda_requests(self):
        return sum(n for (_, _, _, n) in self.invocations)

    def gb_seconds(self):
        return sum(mem / 1024 * math.ceil(ms) / 1000 * n
                   for (_, mem, ms, n) in self.invocations + self.riding)

    def duration_ms(self):
        return sum(ms for (_, _, ms, _) in self.invocations + self.riding)

    def costs(self):
        return {
            "Lambda requests": self.lambda_requests() * LAMBDA_PER_MILLION_REQUESTS / 1e6,
            "Lambda GB-s": self.gb_seconds() * LAMBDA_ARM_PER_GB_SECOND,
            "API Gateway": self.api_requests * HTTP_API_PER_MILLION_REQUESTS / 1e6,
            "DynamoDB reads": self.read_units * DYNAMODB_PER_MILLION_READ_UNITS / 1e6,
            "DynamoDB writes": self.write_units * DYNAMODB_PER_MILLION_WRITE_UNITS / 1e6,
            "Streams": self.stream_reads * DYNAMODB_STREAMS_PER_100K_READS / 1e5,
            "S3": self.s3_puts * S3_PER_1K_PUT / 1e3 + self.s3_gets * S3_PER_1K_GET / 1e3,
            "Logs": self.log_bytes / BYTES_PER_GB * CLOUDWATCH_LOGS_PER_GB_INGESTED,
        }

    def total(self):
        return sum(self.costs().values())

    def scaled(self, n, label):
        """This usage `n` times (a month's line)."""
        return Usage(
            label=label, source=self.source, api_requests=self.api_requests * n,
            invocations=[(f, m, ms, c * n) for (f, m, ms, c) in self.invocations],
            riding=[(f, m, ms, c * n) for (f, m, ms, c) in self.riding],
            read_units=self.read_units * n,
            write_units_reported=(None if self.write_units_reported is None
                                  else self.write_units_reported * n),
            write_units=self.write_units * n, stream_reads=self.stream_reads * n,
            s3_puts=self.s3_puts * n, s3_gets=self.s3_gets * n,
            log_lines=self.log_lines * n, log_bytes=self.log_bytes * n, calls=self.calls)


COMPONENTS = ["Lambda requests", "Lambda GB-s", "API Gateway", "DynamoDB reads",
              "DynamoDB writes", "Streams", "S3", "Logs"]


def priced_writes(row, transactional, counter_units):
    """Write units as DynamoDB bills them. DynamoDB Local reports a
    transaction's Put actions at one unit per KB (not two, and not its
    Update actions): the writes beyond the rate-limit counter's are doubled
    when they are one transaction."""
    if row.billed is not None:
        return row.billed
    if not transactional:
        return row.write_units
    rest = max(row.write_units - counter_units, 0.0)
    return min(counter_units, row.write_units) + TRANSACTIONAL_WRITE_FACTOR * rest


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

@dataclass
class Spec:
    """A priced API operation: the refbench row (by the start of its name),
    whether its writes past the rate-limit counter are one transaction,
    whether it authenticates (the log line names the account), its status,
    the load row its duration comes from and the refbench row of that load
    request (to scale by round trips), and how many event items it commits
    (each reaches the stream consumer)."""
    key: str
    label: str
    row_prefix: str
    transactional: bool
    keyed: bool
    status: int
    load_row: str
    load_base: str
    events: int = 0


# The read whose only write is the account's rate-limit counter: its write
# units are the counter's, which are not part of a transaction.
COUNTER_ROW = "GET /campaigns/{id} (auth path"
# refbench rows (by the start of their names) and `refbench load` rows.
CLICK_WARM = "POST /track/click (warm"
POSTBACK_BY_CODE = "POST /conversions/postback (by affiliate code"
LOAD_CLICK = "POST /track/click (warm)"
LOAD_GET = "GET /campaigns/{id}"
LOAD_POSTBACK = "POST /conversions/postback (by code)"

SPECS = [
    Spec("click", "Click (warm: campaign and code cached)",
         CLICK_WARM, False, False, 201, LOAD_CLICK, CLICK_WARM),
    Spec("click_cold", "Click (first of a process for its campaign and code)",
         "POST /track/click (cold", False, False, 201, LOAD_CLICK, CLICK_WARM),
    Spec("postback", "Postback, attributed (by affiliate code, warm)",
         POSTBACK_BY_CODE, True, True, 201, LOAD_POSTBACK, POSTBACK_BY_CODE, events=1),
    Spec("postback_cold", "Postback, attributed (by click id, first of a process for its affiliate)",
         "POST /conversions/postback (by click id", True, True, 201,
         LOAD_POSTBACK, POSTBACK_BY_CODE, events=1),
    Spec("read_list", "API read: conversion list, a page of 20",
         "GET /conversions?limit=20 (page 1", False, True, 200, LOAD_GET, COUNTER_ROW),
    Spec("read_get", "API read: one record by id",
         COUNTER_ROW, False, True, 200, LOAD_GET, COUNTER_ROW),
]
# Settling conversions: the payout job's run over due conversions, and
# marking a payout paid.
PAYOUT_JOB_ROW = re.compile(r"^payout job: [\d,]+ due conversions.*\((\d+) approved, (\d+) payouts\)$")
PAYOUT_IDLE_ROW = "payout job: nothing due"
MARK_PAID_ROW = re.compile(r"^PUT /payouts/\{id\}/mark-paid \(from PENDING, (\d+) conversions\)$")
# Paying through the Stripe rail (`refbench rails`): one batch-process call
# that pays N payouts by transfer, and how many provider waves it took.
RAIL_BATCH_ROW = re.compile(r"^POST /payouts/batch-process \((\d+) payouts, Stripe transfers\)$")
RAIL_WAVES_LINE = re.compile(r"^provider: POST /payouts/batch-process \((\d+) payouts, Stripe "
                             r"transfers\): \d+ requests for \d+ payouts, at most (\d+) at once "
                             r"\((\d+) waves\)$", re.M)


def method_path(row_name):
    m = re.match(r"^(GET|POST|PUT|PATCH|DELETE) (/[^ ?]*)", row_name)
    if not m:
        raise InputError(f"row '{row_name}' does not start with a method and a path")
    return m.group(1), m.group(2)


class Model:
    def __init__(self, rows, concurrency, rates, template, shards, receiver_ms):
        self.rows = rows
        self.template = template
        self.shards = shards
        self.receiver_ms = receiver_ms
        self.concurrency = concurrency
        self.rates = rates
        self.counter = find_row(rows, COUNTER_ROW, "the rate-limit counter's write units")
        get_rate = find_rate(rates, LOAD_GET, "one DynamoDB round trip")
        # One sequential DynamoDB round trip, from the plainest request: a GET
        # is its round trips and nothing else of note.
        self.round_trip_ms = concurrency / get_rate * 1000 / max(self.counter.round_trips, 1)
        self.consumer = function_where(template, "the DynamoDB stream consumer",
                                       lambda f: f.stream_consumer)
        self.usages = {}
        for spec in SPECS:
            self.usages[spec.key] = self.operation(spec)
        self.usages["webhook"] = self.webhook_delivery()

    def duration_ms(self, spec, row):
        """The measured time of the load row's request (concurrency / rate),
        scaled by round trips when this row is a variant of it."""
        rate = find_rate(self.rates, spec.load_row, spec.label)
        measured = self.concurrency / rate * 1000
        base = find_row(self.rows, spec.load_base, spec.label)
        return measured * row.round_trips / max(base.round_trips, 1)

    def operation(self, spec):
        row = find_row(self.rows, spec.row_prefix, spec.label)
        method, path = method_path(row.name)
        fn, route = route_function(self.template, method, path)
        ms = self.duration_ms(spec, row)
        u = Usage(spec.label, source=f"`{row.name}`")
        u.calls = f"{row.calls} calls, {row.round_trips} round trips"
        u.api_requests = 1
        u.invocations.append((fn.name, fn.memory_mb, ms, 1))
        u.read_units = row.read_units
        u.write_units_reported = row.write_units
        u.write_units = priced_writes(row, spec.transactional, self.counter.write_units)
        lines = invocation_lines(self.template.log_format, fn.memory_mb, ms,
                                 [request_line(method, route, spec.status, spec.keyed, ms)])
        if fn.s3_actions:
            raise InputError(f"{spec.label}: {fn.name} may call S3 ({', '.join(fn.s3_actions)}), "
                             "which refbench does not count: price its S3 requests here")
        for _ in range(spec.events):
            # The event item reaches the stream consumer (filtered to event
            # inserts), which reads the tenant's endpoints even when none.
            c_ms = EVENT_CONSUMER["round_trips"] * self.round_trip_ms
            u.invocations.append((self.consumer.name, self.consumer.memory_mb, c_ms, 1))
            u.read_units += EVENT_CONSUMER["queries"] * EVENTUALLY_CONSISTENT_MIN_READ
            lines += invocation_lines(self.template.log_format, self.consumer.memory_mb, c_ms)
        u.log_lines = len(lines)
        u.log_bytes = log_bytes(lines)
        if spec.key == "postback":
            self.sample_lines = list(lines)
        return u

    def webhook_delivery(self):
        w = WEBHOOK_DELIVERY
        ms = w["round_trips"] * self.round_trip_ms + self.receiver_ms
        u = Usage("Webhook delivery (one event to one endpoint, first attempt 2xx)",
                  source="modelled from the code (refbench has no row)")
        u.calls = f"2 transactions, {w['round_trips']} round trips, 1 signed POST"
        # It runs inside the event's consumer invocation, priced with the
        # postback: its own part is the extra duration.
        u.riding.append((self.consumer.name, self.consumer.memory_mb, ms, 1))
        u.read_units = w["read_units"]
        u.write_units_reported = None  # not measured
        u.write_units = (TRANSACTIONAL_WRITE_FACTOR * w["transactional_item_writes"]
                         + w["index_entry_writes"])
        lines = [webhook_attempt_line(self.receiver_ms)]
        self.sample_lines += lines
        u.log_lines = len(lines)
        u.log_bytes = log_bytes(lines)
        return u

    def settlement(self, conversions, payouts):
        """Approving and paying `conversions` conversions in `payouts`
        payouts: the payout job's units per approved conversion and a
        mark-paid's units per settled conversion, from refbench's rows."""
        job = None
        # A metered run (its billed units) before the others.
        for r in sorted(self.rows, key=lambda r: r.billed is None):
            m = PAYOUT_JOB_ROW.match(r.name)
            if m and int(m.group(1)) > 0:
                job, approved = r, int(m.group(1))
                break
        if job is None:
            raise InputError("settlement: no refbench row 'payout job: N due conversions ... "
                             "(N approved, M payouts)'")
        paid = None
        for r in self.rows:
            m = MARK_PAID_ROW.match(r.name)
            if m and int(m.group(1)) > 0:
                paid, held = r, int(m.group(1))
                break
        if paid is None:
            raise InputError("settlement: no refbench row 'PUT /payouts/{id}/mark-paid "
                             "(from PENDING, N conversions)'")
        job_fn = function_where(self.template, "the payout job (binary payout-job)",
                                lambda f: f.binary == "payout-job")
        method, path = method_path(paid.name)
        pay_fn, route = route_function(self.template, method, path)
        u = Usage("Settling them: payout job approvals and mark-paid",
                  source=f"`{job.name}` per approved conversion; `{paid.name}` per conversion")
        per_conv_job_ms = job.round_trips / approved * self.round_trip_ms
        per_conv_paid_ms = paid.round_trips / held * self.round_trip_ms
        # The job's time per conversion rides on its daily runs (counted in
        # the fixed costs); mark-paid is one request per payout.
        u.riding.append((job_fn.name, job_fn.memory_mb, per_conv_job_ms, conversions))
        pay_ms = per_conv_paid_ms * conversions / max(payouts, 1)
        u.invocations.append((pay_fn.name, pay_fn.memory_mb, pay_ms, payouts))
        u.api_requests = payouts
        u.read_units = (job.read_units / approved + paid.read_units / held) * conversions
        u.write_units_reported = (job.write_units / approved + paid.write_units / held) * conversions
        # Both write in transactions; mark-paid's rate-limit count is once
        # per request. Metered rows give what DynamoDB bills as it is.
        if job.billed is not None and paid.billed is not None:
            u.write_units = (job.billed / approved * conversions
                             + (paid.billed - self.counter.write_units) / held * conversions
                             + self.counter.write_units * payouts)
        else:
            u.write_units = (TRANSACTIONAL_WRITE_FACTOR * job.write_units / approved * conversions
                             + TRANSACTIONAL_WRITE_FACTOR
                             * max(paid.write_units - self.counter.write_units, 0)
                             / held * conversions
                             + self.counter.write_units * payouts)
        lines = invocation_lines(self.template.log_format, pay_fn.memory_mb, pay_ms,
                                 [request_line(method, route, 200, True, pay_ms)])
        u.log_lines = len(lines) * payouts
        u.log_bytes = log_bytes(lines) * payouts
        return u

    def rail_payouts(self, payouts, text, stripe_ms):
        """Paying `payouts` payouts through Stripe Connect in one
        batch-process call instead of marking each paid: refbench's rails row
        scaled per payout, each provider wave waiting `stripe_ms`; with the
        provider calls the row made at once."""
        row = None
        for r in self.rows:
            m = RAIL_BATCH_ROW.match(r.name)
            if m and r.billed is not None:
                row, n = r, int(m.group(1))
                break
        waves = {int(m.group(1)): (int(m.group(2)), int(m.group(3)))
                 for m in RAIL_WAVES_LINE.finditer(text)}
        if row is None or n not in waves:
            raise InputError("rail payouts: no metered refbench row 'POST /payouts/batch-process "
                             "(N payouts, Stripe transfers)' with its provider line "
                             "(run `scripts/bench.sh rails`)")
        method, path = method_path(row.name)
        fn, route = route_function(self.template, method, path)
        # The provider's answers arrive in waves of concurrent calls; the
        # DynamoDB round trips are the row's own.
        at_once, wave_count = waves[n]
        ms = row.round_trips * self.round_trip_ms + wave_count * stripe_ms
        u = Usage(f"Instead of mark-paid: the {payouts:,} payouts paid through Stripe "
                  f"Connect, one batch-process call",
                  source=f"`{row.name}`, per payout")
        u.invocations.append((fn.name, fn.memory_mb, ms * payouts / n, 1))
        u.api_requests = 1
        u.read_units = row.read_units / n * payouts
        u.write_units_reported = row.write_units / n * payouts
        u.write_units = row.billed / n * payouts
        lines = invocation_lines(self.template.log_format, fn.memory_mb, ms,
                                 [request_line(method, route, 200, True, ms)])
        u.log_lines = len(lines)
        u.log_bytes = log_bytes(lines)
        return u, at_once

    def fixed(self):
        """A deployment's costs whatever the traffic: the scheduled functions
        with nothing to do, and the signing secret."""
        out = []
        sweep = function_where(self.template, "the webhook sweep (binary webhook-sweep)",
                               lambda f: f.binary == "webhook-sweep")
        for rate in sweep.schedules:
            n = runs_per_month(rate)
            ms = self.shards * self.round_trip_ms
            u = Usage(f"Webhook retry sweep, {rate}, nothing due",
                      source=f"{self.shards} GSI5 Queries a run (`WORK_SHARDS`)")
            u.invocations.append((sweep.name, sweep.memory_mb, ms, n))
            u.read_units = self.shards * EVENTUALLY_CONSISTENT_MIN_READ * n
            lines = invocation_lines(self.template.log_format, sweep.memory_mb, ms, [sweep_line()])
            u.log_lines = len(lines) * n
            u.log_bytes = log_bytes(lines) * n
            out.append(u)
        job_fn = function_where(self.template, "the payout job (binary payout-job)",
                                lambda f: f.binary == "payout-job")
        idle = find_row(self.rows, PAYOUT_IDLE_ROW, "the payout job's idle run")
        for rate in job_fn.schedules:
            n = runs_per_month(rate)
            ms = idle.round_trips * self.round_trip_ms
            u = Usage(f"Payout job, {rate}, nothing due", source=f"`{idle.name}`")
            u.invocations.append((job_fn.name, job_fn.memory_mb, ms, n))
            # DynamoDB Local reports no units for a Query that finds nothing;
            # DynamoDB charges half a unit for each.
            u.read_units = max(idle.read_units, idle.calls * EVENTUALLY_CONSISTENT_MIN_READ) * n
            u.write_units = u.write_units_reported = idle.write_units * n
            lines = invocation_lines(self.template.log_format, job_fn.memory_mb, ms,
                                     [payout_job_line()])
            u.log_lines = len(lines) * n
            u.log_bytes = log_bytes(lines) * n
            out.append(u)
        return out


# --------------------------------------------------------------------------
# The document
# --------------------------------------------------------------------------

def usd(x):
    """Dollars: cents from $1 up, three significant digits below."""
    if x == 0:
        return "$0"
    if x >= 100:
        return f"${x:,.0f}"
    if x >= 1:
        return f"${x:,.2f}"
    digits = max(2, 2 - int(math.floor(math.log10(abs(x)))))
    text = f"{x:.{digits}f}".rstrip("0")
    if len(text.split(".")[1]) < 2:
        text = f"{x:.2f}"
    return "$" + text


def num(x, places=1):
    if x == int(x):
        return f"{int(x):,}"
    return f"{x:,.{places}f}"


def render(model, args, inputs):
    t = model.template
    u = model.usages
    out = []
    w = out.append
    w("# What it costs on AWS")
    w("")
    w("<!-- Generated by scripts/cost.py from `make bench`: do not edit by hand. -->")
    w("")
    w("Generated by `scripts/cost.py`, which `make bench` runs after `refbench`: "
      "the DynamoDB calls, round trips and capacity units are refbench's (the "
      "table in [performance.md](performance.md)), the durations are estimates "
      "from its load section, memory sizes, routes and schedules are "
      "`template.yaml`'s, and the log bytes are those of the lines the functions "
      "write. When a count changes, `make bench` changes this page. The only "
      "figures typed in are AWS list prices, the competitors' published plan "
      "prices, the scenario's stated assumptions, and the webhook delivery's "
      "DynamoDB work, which refbench does not measure (modelled from the code, below).")
    w("")
    w("Prices: AWS list prices, us-east-1, as of 2026-11, **without free tiers** "
      "(which would make a small deployment nearly free: 1 million Lambda "
      "requests and 400,000 GB-s, 2.5 million stream reads, 5 GB of logs a month).")
    w("")
    w("| price | USD | page |")
    w("|---|---:|---|")
    w(f"| Lambda, arm64, per GB-second | {LAMBDA_ARM_PER_GB_SECOND:.10f} | aws.amazon.com/lambda/pricing |")
    w(f"| Lambda, per million requests | {LAMBDA_PER_MILLION_REQUESTS:.2f} | aws.amazon.com/lambda/pricing |")
    w(f"| API Gateway HTTP API, per million requests (first 300 million) | {HTTP_API_PER_MILLION_REQUESTS:.2f} | aws.amazon.com/api-gateway/pricing |")
    w(f"| DynamoDB on-demand, per million write request units | {DYNAMODB_PER_MILLION_WRITE_UNITS} | aws.amazon.com/dynamodb/pricing/on-demand |")
    w(f"| DynamoDB on-demand, per million read request units | {DYNAMODB_PER_MILLION_READ_UNITS} | aws.amazon.com/dynamodb/pricing/on-demand |")
    w(f"| DynamoDB Streams, per 100,000 read request units (Lambda triggers' reads are free) | {DYNAMODB_STREAMS_PER_100K_READS} | aws.amazon.com/dynamodb/pricing/on-demand |")
    w(f"| S3 Standard, per 1,000 PUT / per 1,000 GET | {S3_PER_1K_PUT} / {S3_PER_1K_GET} | aws.amazon.com/s3/pricing |")
    w(f"| CloudWatch Logs, per GB ingested / per GB-month stored | {CLOUDWATCH_LOGS_PER_GB_INGESTED:.2f} / {CLOUDWATCH_LOGS_PER_GB_MONTH_STORED} | aws.amazon.com/cloudwatch/pricing |")
    w(f"| Secrets Manager, per secret a month | {SECRETS_MANAGER_PER_SECRET_MONTH:.2f} | aws.amazon.com/secrets-manager/pricing |")
    w("")

    w("## A million of each")
    w("")
    keys = ["click", "click_cold", "postback", "postback_cold", "read_list", "read_get", "webhook"]
    w("| per million | " + " | ".join(COMPONENTS) + " | total |")
    w("|---|" + "---:|" * (len(COMPONENTS) + 1))
    for k in keys:
        c = u[k].costs()
        total = sum(c.values())
        w(f"| {u[k].label} | " + " | ".join(usd(c[n] * 1e6) for n in COMPONENTS)
          + f" | **{usd(total * 1e6)}** |")
    w("")
    w("What one of each uses:")
    w("")
    w("| operation | DynamoDB figures from | calls | function, memory | est. duration | "
      "Lambda invocations | read units | write units (refbench) | write units (priced) | "
      "log lines, bytes |")
    w("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        x = u[k]
        fns = ", ".join(f"{f} {m} MB: {ms:.0f} ms" for (f, m, ms, _) in x.invocations + x.riding)
        inv = x.lambda_requests()
        w(f"| {x.label} | {x.source} | {x.calls} | {fns} | "
          f"{x.duration_ms():.0f} ms | {num(inv)} | "
          f"{num(x.read_units)} | "
          f"{'–' if x.write_units_reported is None else num(x.write_units_reported)} | "
          f"{num(x.write_units)} | "
          f"{num(x.log_lines)}, {num(x.log_bytes)} |")
    w("")
    w("How these are made:")
    w("")
    w(f"- **Durations are local estimates**, not Lambda measurements: refbench's load "
      f"section drives the local host with {model.concurrency} clients at a time against "
      f"DynamoDB Local on a shared machine, so a request takes about "
      f"{model.concurrency} ÷ its rate a second (a click "
      f"{model.concurrency / model.rates[LOAD_CLICK] * 1000:.0f} ms, a GET "
      f"{model.concurrency / model.rates[LOAD_GET] * 1000:.0f} ms, a postback "
      f"{model.concurrency / model.rates[LOAD_POSTBACK] * 1000:.0f} ms). "
      f"A variant of a measured request (a cold click, the first postback of a process, "
      f"a list page) is scaled by its sequential round trips; one round trip, from the "
      f"GET, is {model.round_trip_ms:.1f} ms. refbench counts a request's round trips as "
      f"its longest chain of calls in which each started after the one before it ended "
      f"(calls under way together share a link). DynamoDB answers in a few milliseconds "
      f"where DynamoDB Local here takes tens, while a {u['click'].invocations[0][1]} MB "
      f"Lambda has a fraction of a core: read the GB-s column as an order of magnitude. "
      f"Lambda bills each invocation's duration rounded up to the millisecond; init "
      f"(cold starts) is not counted.")
    w(f"- **Memory** is each function's `MemorySize` in `template.yaml`; the route names "
      f"the function.")
    w(f"- **Write units are priced above refbench's count**: DynamoDB Local counts a "
      f"`TransactWriteItems`'s Put actions at one unit per KB, where DynamoDB charges "
      f"two (see performance.md). So a postback's and a mark-paid's writes are doubled "
      f"but for the account's rate-limit counter (a plain update: the write units of "
      f"`{model.counter.name}`, {num(model.counter.write_units)}), and the payout job's "
      f"writes are all doubled; a click's put and its per-IP counter are plain writes. "
      f"DynamoDB Local also leaves out a transaction's Update actions (a postback's "
      f"rollup and TOTALS items), while DynamoDB does not double index entries: the "
      f"priced figure is an estimate, the table's `ConsumedWriteCapacityUnits` metric "
      f"is the truth.")
    w(f"- **A postback's event** (its `conversion.created` item) reaches the "
      f"`{model.consumer.name}` through the table's stream, filtered to event inserts: "
      f"one invocation per event at low rates (it takes batches of up to 100 when events "
      f"come faster) and one eventually consistent Query of the tenant's endpoints "
      f"({EVENTUALLY_CONSISTENT_MIN_READ} read unit), endpoints or not. That is in the "
      f"postback rows. **Stream reads cost nothing**: the only consumer is a Lambda "
      f"trigger, whose `GetRecords` calls DynamoDB does not charge.")
    w(f"- **A webhook delivery** is priced on top of its event's consumer run: the "
      f"extra time ({WEBHOOK_DELIVERY['round_trips']} round trips and the receiver's "
      f"answer, assumed {model.receiver_ms:.0f} ms), two transactions "
      f"({WEBHOOK_DELIVERY['transactional_item_writes']} item writes at two units, "
      f"{WEBHOOK_DELIVERY['index_entry_writes']} index entries at one; items under 1 KB) "
      f"and its log line. refbench measures its latency, not its DynamoDB work: "
      f"**these write units are modelled from the code** "
      f"(`services::webhooks::first_attempt`), not counted. A retry adds a sweep claim "
      f"and reads of the endpoint and the event.")
    with_s3 = sorted(f.name for f in t.functions.values() if f.s3_actions)
    w(f"- **S3**: none of these operations' functions is allowed an S3 action in "
      f"`template.yaml` (only {', '.join(with_s3) or 'none'}).")
    w(f"- **Logs**: each operation's lines as the code writes them (one JSON line per "
      f"request from `api::http::layer`, one per webhook attempt) beside Lambda's "
      f"own `platform.start` and `platform.report` lines (`LogFormat: {t.log_format}`), "
      f"built here with real id lengths, plus {CLOUDWATCH_EVENT_OVERHEAD_BYTES} bytes "
      f"per log event. Errors and warnings add lines; none are counted.")
    w("")

    # The month.
    conv = args.conversions
    month = [
        u["click_cold"].scaled(args.clicks, f"{args.clicks:,} clicks (priced as the cold row)"),
        u["postback_cold"].scaled(conv, f"{conv:,} postbacks (priced as the first-of-a-process row)"),
        u["read_list"].scaled(args.api_reads, f"{args.api_reads:,} API reads (priced as list pages)"),
    ]
    hooks = u["webhook"].scaled(args.webhook_deliveries, f"{args.webhook_deliveries:,} webhook deliveries")
    month.append(hooks)
    month.append(model.settlement(conv, args.payouts))
    fixed = model.fixed()
    month_cost = [(x, x.costs()) for x in month + fixed]
    secret = t.secrets * SECRETS_MANAGER_PER_SECRET_MONTH
    total = sum(sum(c.values()) for (_, c) in month_cost) + secret
    log_gb = sum(x.log_bytes for (x, _) in month_cost) / BYTES_PER_GB

    w(f"## A month: {args.clicks:,} clicks and {conv:,} conversions")
    w("")
    w("Assumptions, stated (change them with the script's options):")
    w("")
    w(f"- {args.clicks:,} clicks (`--clicks`) and {conv:,} attributed postbacks "
      f"(`--conversions`). At about {args.clicks / (HOURS_PER_MONTH * 60):.1f} clicks a "
      f"minute spread over affiliates, few find their campaign and code in a process's "
      f"60 s cache: they are priced as the cold click row, the postbacks as the first "
      f"postback of a process for its affiliate.")
    w(f"- {args.api_reads:,} API reads (`--api-reads`): the merchant's dashboard and "
      f"integrations, priced as a page of the conversion list.")
    w(f"- {args.webhook_deliveries:,} webhook deliveries (`--webhook-deliveries`): one "
      f"endpoint subscribed to `conversion.created`, answering 2xx in "
      f"{args.receiver_ms:.0f} ms (`--receiver-ms`) on the first attempt.")
    w(f"- The month's conversions approved by the payout job and paid in "
      f"{args.payouts:,} payouts (`--payouts`) with `PUT /payouts/{{id}}/mark-paid`, "
      f"priced per conversion from refbench's payout rows.")
    w(f"- Not counted: identify calls, sign-ups, refunds, invoice files (S3: a PUT and "
      f"a HEAD per payout), the events payouts write (batched to the consumer), DynamoDB "
      f"storage and point-in-time recovery (item sizes are not in refbench's output), "
      f"Secrets Manager API calls (one per cold start that authenticates), data transfer.")
    w("")
    w("| this month | " + " | ".join(COMPONENTS) + " | total |")
    w("|---|" + "---:|" * (len(COMPONENTS) + 1))
    for (x, c) in month_cost:
        w(f"| {x.label} | " + " | ".join(usd(c[n]) for n in COMPONENTS)
          + f" | {usd(sum(c.values()))} |")
    w(f"| Secrets Manager: {t.secrets} secret{'s' if t.secrets != 1 else ''} "
      f"(the key signing secret; the client-address salt, resolved at deploy) | "
      + " | ".join("" for _ in COMPONENTS) + f" | {usd(secret)} |")
    w(f"| **total** | " + " | ".join(
        usd(sum(c[n] for (_, c) in month_cost)) for n in COMPONENTS)
      + f" | **{usd(total)}** |")
    w("")
    retention = ("no log group in `template.yaml` sets a retention, so Lambda's log "
                 "groups keep everything"
                 if t.log_groups_with_retention == 0 else
                 "the template sets log retention")
    w(f"The sweep and the payout job run whatever the traffic (a deployment's floor, "
      f"shared by every merchant it serves). The month ingests {log_gb:.3f} GB of logs; "
      f"{retention}: each month adds at most that much to storage "
      f"({usd(CLOUDWATCH_LOGS_PER_GB_MONTH_STORED)} per GB-month, less once compressed).")
    w("")
    rail, at_once = model.rail_payouts(args.payouts, model.text, args.stripe_ms)
    rail_cost = rail.costs()
    w(f"Paying the {args.payouts:,} payouts through Stripe Connect (`POST /payouts/"
      f"batch-process` with a paying integration, docs/payouts.md) takes the place of "
      f"their mark-paid requests in the row above: one call, priced from what refbench's "
      f"rails row counts per payout (the PROCESSING commit, the provider call and the "
      f"PAID commit with its conversions, rollups and events: "
      f"{num(rail.write_units / max(args.payouts, 1))} billed write units a payout). The function waits for Stripe in waves of "
      f"{at_once} concurrent transfers, each assumed {args.stripe_ms:.0f} ms (`--stripe-ms`). Stripe charges "
      f"its own Connect fees on top, which this page does not count.")
    w("")
    w("| instead of mark-paid | " + " | ".join(COMPONENTS) + " | total |")
    w("|---|" + "---:|" * (len(COMPONENTS) + 1))
    w(f"| {rail.label} | " + " | ".join(usd(rail_cost[n]) for n in COMPONENTS)
      + f" | {usd(sum(rail_cost.values()))} |")
    w("")
    w("### Beside the hosted services")
    w("")
    w(f"External list prices: each vendor's entry plan billed monthly, as published on "
      f"its pricing page, as known on {COMPETITORS_AS_OF} (typed in `scripts/cost.py`, "
      f"not fetched: check the page before quoting). Entry plans cap the revenue or the "
      f"partners they track; a merchant with {conv:,} conversions a month is likely on a "
      f"higher tier, so these are the least it would pay.")
    w("")
    w("| service | entry plan | USD a month | note | source |")
    w("|---|---|---:|---|---|")
    for (name, plan, price, url, note) in COMPETITORS:
        shown = "not published" if price is None else f"${price}"
        w(f"| {name} | {plan} | {shown} | {note} | {url} |")
    w(f"| this API on AWS, the month above | on-demand | **{usd(total)}** | AWS list "
      f"prices without free tiers; the operator runs it | this page |")
    w("")
    w("The hosted prices buy what this page does not count: the dashboards, the "
      "affiliate portal, payouts sent, support, and someone else running it.")
    w("")
    w("## The log lines counted")
    w("")
    w("A warm postback's, as the script builds them (the request line from "
      "`api::http::layer::envelope`, Lambda's two per invocation, and the stream "
      "consumer's two), then a webhook attempt's; CloudWatch adds "
      f"{CLOUDWATCH_EVENT_OVERHEAD_BYTES} bytes to each:")
    w("")
    w("```")
    for line in model.sample_lines:
        w(line)
    w("```")
    w("")
    w("Inputs: " + ", ".join(f"`{os.path.relpath(p, ROOT)}`" for p in inputs)
      + ", `template.yaml`, `store/src/keys.rs` (`WORK_SHARDS`).")
    w("")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", action="append",
                   help="refbench output (repeatable; default: target/bench/refbench.txt, "
                        "load.txt and rails.txt)")
    p.add_argument("--output", default=os.path.join(ROOT, "docs", "cost.md"))
    p.add_argument("--template", default=os.path.join(ROOT, "template.yaml"))
    p.add_argument("--keys", default=os.path.join(ROOT, "store", "src", "keys.rs"))
    p.add_argument("--clicks", type=int, default=100_000)
    p.add_argument("--conversions", type=int, default=10_000)
    p.add_argument("--api-reads", type=int, default=30_000)
    p.add_argument("--webhook-deliveries", type=int, default=10_000)
    p.add_argument("--payouts", type=int, default=50)
    p.add_argument("--receiver-ms", type=float, default=100.0)
    p.add_argument("--stripe-ms", type=float, default=400.0)
    args = p.parse_args(argv)
    inputs = args.input or [os.path.join(ROOT, "target", "bench", f)
                            for f in ("refbench.txt", "load.txt", "rails.txt")]
    try:
        text = ""
        for path in inputs:
            try:
                with open(path, encoding="utf-8") as f:
                    text += f.read() + "\n"
            except OSError as e:
                raise InputError(f"{path}: {e.strerror} (run `make bench` first)") from None
        rows = operation_rows(text)
        if not rows:
            raise InputError("no refbench operations table (`| operation | DynamoDB calls | ...`) "
                             "in " + ", ".join(inputs))
        concurrency, rates = load_rates(text)
        if not rates:
            raise InputError("no `refbench load` table (`| requests | API per second | ...`) "
                             "in " + ", ".join(inputs))
        template = read_template(args.template)
        shards = work_shards(args.keys)
        model = Model(rows, concurrency, rates, template, shards, args.receiver_ms)
        model.text = text
        doc = render(model, args, inputs)
    except InputError as e:
        print(f"cost.py: {e}", file=sys.stderr)
        return 2
    tmp = args.output + ".new"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(doc)
    os.replace(tmp, args.output)
    print(f"cost.py: wrote {os.path.relpath(args.output, os.getcwd())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
