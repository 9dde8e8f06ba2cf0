#!/usr/bin/env python3
"""Checks schemas/: every JSON Schema is valid, every example validates against its schema, and
the topic catalogue (topics.json) matches the constants in Sources/StageRuntime/Topics.swift."""
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
for topic in catalogue:
    if "schema" in topic and not (schemas / topic["schema"]).exists():
        failures.append(f"topics.json: {topic['name']} names a missing schema {topic['schema']}")
    if topic.get("dlq") and topic["dlq"] not in {t["name"] for t in catalogue}:
        failures.append(f"topics.json: {topic['name']} names a missing DLQ {topic['dlq']}")

swift = (root / "Sources/StageRuntime/Topics.swift").read_text()
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
