#!/usr/bin/env python3
"""Checks schemas/: every JSON Schema is valid, every example validates against its schema, the
topic catalogue (topics.json) matches the constants in Sources/2-Clients/PipelineRecords/Contracts/Topics.swift, and its
replication and configs keep the promises of the design (DLQs kept, raw replayable for a month,
the changes topic never compacted, min.insync.replicas within the replication factor)."""
import json
import pathlib
import re
import sys

import jsonschema
from referencing import Registry, Resource

root = pathlib.Path(__file__).resolve().parents[2]
schemas = root / "schemas"
failures = []

# Every schema by its $id, so one schema can refer to another (enriched.v1 embeds verified.v1).
registry = Registry().with_resources(
    (s["$id"], Resource.from_contents(s))
    for s in (json.loads(p.read_text()) for p in sorted(schemas.glob("*.schema.json")))
    if "$id" in s
)

for schema_path in sorted(schemas.glob("*.schema.json")):
    schema = json.loads(schema_path.read_text())
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        failures.append(f"{schema_path.name}: not a valid JSON Schema: {e.message}")
        continue
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker(), registry=registry)
    name = schema_path.name[: -len(".schema.json")]
    examples = sorted((schemas / "examples" / name).glob("*.json"))
    if not examples:
        failures.append(f"{schema_path.name}: no examples under schemas/examples/{name}/")
    for example in examples:
        errors = list(validator.iter_errors(json.loads(example.read_text())))
        if errors:
            failures.append(f"{example.relative_to(root)}: {errors[0].message}")
    for bad in sorted((schemas / "examples" / name / "invalid").glob("*.json")):
        if not list(validator.iter_errors(json.loads(bad.read_text()))):
            failures.append(f"{bad.relative_to(root)}: an invalid example validated")

catalogue = json.loads((schemas / "topics.json").read_text())["topics"]
known_keys = {"name", "key", "partitions", "replicationFactor", "configs", "producer", "consumerGroup", "dlq", "schema", "body"}
# Topic configs whose values must be whole numbers (-1: unlimited).
numeric_configs = {"retention.ms", "retention.bytes", "min.insync.replicas", "segment.ms", "segment.bytes",
                   "max.message.bytes", "min.compaction.lag.ms", "delete.retention.ms"}


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


for topic in catalogue:
    name = topic.get("name", "?")
    if set(topic) - known_keys:
        failures.append(f"topics.json: {name} has unknown keys {sorted(set(topic) - known_keys)}")
    if "schema" in topic and not (schemas / topic["schema"]).exists():
        failures.append(f"topics.json: {name} names a missing schema {topic['schema']}")
    if topic.get("dlq") and topic["dlq"] not in {t["name"] for t in catalogue}:
        failures.append(f"topics.json: {name} names a missing DLQ {topic['dlq']}")
    # What `appstorectl topics apply` reads: a layout and Kafka topic configs (strings, as Kafka takes them).
    partitions, replication, configs = topic.get("partitions"), topic.get("replicationFactor"), topic.get("configs")
    if not is_int(partitions) or partitions < 1:
        failures.append(f"topics.json: {name}: partitions must be a whole number >= 1 (got {partitions!r})")
    if not is_int(replication) or replication < 1:
        failures.append(f"topics.json: {name}: replicationFactor must be a whole number >= 1 (got {replication!r})")
        replication = None
    if not isinstance(configs, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in configs.items()):
        failures.append(f"topics.json: {name}: configs must be an object of string values (got {configs!r})")
        continue
    for key in sorted(numeric_configs & set(configs)):
        if not re.fullmatch(r"-?[0-9]+", configs[key]):
            failures.append(f"topics.json: {name}: {key} must be a whole number (got {configs[key]!r})")
    for key in ("min.insync.replicas", "retention.ms", "cleanup.policy"):
        if key not in configs:
            failures.append(f"topics.json: {name}: configs lacks {key}")
    min_insync = configs.get("min.insync.replicas", "")
    if re.fullmatch(r"[0-9]+", min_insync) and replication is not None:
        if not 1 <= int(min_insync) <= replication:
            failures.append(f"topics.json: {name}: min.insync.replicas {min_insync} must be between 1 and the replication factor {replication}")
        if replication < 3 or int(min_insync) < 2:
            failures.append(f"topics.json: {name}: production needs replication factor >= 3 and min.insync.replicas >= 2 (got {replication}, {min_insync})")
    policies = set(configs.get("cleanup.policy", "").split(","))
    if not policies <= {"delete", "compact"}:
        failures.append(f"topics.json: {name}: cleanup.policy {configs.get('cleanup.policy')!r} is not delete, compact or both")
    retention = configs.get("retention.ms", "")
    if name.endswith(".dlq.v1"):
        # Dead letters are kept long enough to be dealt with (60 days or more: longer than raw, so a
        # dead letter outlives the raw copy a replay would start from), but not without bound: a
        # flood of junk must not fill the disks (retention.bytes, and the DeadLetterQueueFilling alert).
        dlq_bytes = configs.get("retention.bytes", "")
        if not (retention.isdigit() and int(retention) >= 60 * 24 * 3600 * 1000):
            failures.append(f"topics.json: {name}: a DLQ keeps its records 60 days or more (retention.ms {retention!r})")
        if not (dlq_bytes.isdigit() and int(dlq_bytes) > 0) or policies != {"delete"}:
            failures.append(f"topics.json: {name}: a DLQ is bounded in size (retention.bytes > 0) and deleted, never compacted")
    elif re.fullmatch(r"[0-9]+", retention) and int(retention) < 7 * 24 * 3600 * 1000:
        failures.append(f"topics.json: {name}: retention.ms {retention} is under 7 days")
    if name == "appstore.notifications.raw.v1" and not (retention == "-1" or (retention.isdigit() and int(retention) >= 31 * 24 * 3600 * 1000)):
        failures.append(f"topics.json: {name}: raw must keep at least a month for replays (retention.ms {retention})")
    if name == "entitlements.changes.v1" and "compact" in policies:
        # Consumers rely on the gap-free per-customer seq: compaction would remove changes.
        failures.append(f"topics.json: {name}: must never be compacted (cleanup.policy {configs.get('cleanup.policy')!r})")

swift = (root / "Sources/2-Clients/PipelineRecords/Contracts/Topics.swift").read_text()
constants = dict(re.findall(r'static let (\w+) = "([^"]+)"', swift))
pairs = re.findall(r'\((\w+), (\d+)\)', swift)
swift_catalogue = {constants[name]: int(n) for name, n in pairs if name in constants}
json_catalogue = {t["name"]: t["partitions"] for t in catalogue}
if swift_catalogue != json_catalogue:
    failures.append(f"Topics.swift {swift_catalogue} differs from topics.json {json_catalogue}")

if failures:
    print("schema check failed:", *failures, sep="\n  ")
    sys.exit(1)
print(f"schemas ok: {len(list(schemas.glob('*.schema.json')))} schemas, {len(json_catalogue)} topics")
