"""The module layering, read from Package.swift: every target may import only targets of a lower
layer (or its own layer's foundations listed below), a stage never imports another stage, the store
never imports the stage runtime, and nothing under Sources depends on a target under Tests.

Edges that break a rule today are listed in KNOWN with the reason they still exist; a new one fails,
and so does a listed one that has gone (so the list only shrinks)."""
import os
import re

from checklib import REPO, Checks

# Lowest first. A target may depend on targets of a strictly lower layer only.
LAYERS = [
    # The JSON reader and writer and strict base64, which Apple's models are read and written with;
    # reading configuration.
    {"JSONCoding", "EnvironmentSettings", "LogKeys", "ErrorClassification"},
    # Foundations: librdkafka's C API; the Swift runtime's enqueue hook; timers on the event loops;
    # Apple's signed data (and the settings that say which apps); distributed tracing.
    {"CRdKafka", "CTaskExecutorHook", "EventLoopTimers", "AppStore", "PipelineTracing"},
    # Typed wrappers and contracts: the Kafka client, signing (the local test CA; offer signatures),
    # the App Store Server API client, the records between stages, simulated customers.
    {"KafkaClient", "AppStoreSigning", "OfferSigning", "AppStoreServerAPI", "PipelineRecords", "SimulatedCustomers"},
    # What stages stand on: the runtime, the record builders, the pure decider, the simulated Apple, the lifecycle player.
    {"StageRuntime", "PipelineMessages", "GrantDecision", "AppStoreSimulator", "SimulatedDelivery"},
    # Postgres, operations on topics and groups, the simulator's lifecycle routes.
    {"EntitlementStore", "PipelineOperations", "SimulatorLifecycleRoutes"},
    # The stages and the recovery jobs, side by side (a stage never imports another).
    {"IngestService", "VerifyService", "EnrichService", "GrantService", "ConsumptionResponder", "TokenStamping", "RecoveryJobs"},
    # What grant is measured and tested with (generated enriched-event lifecycles): for benchmarks and
    # tests only, so above every stage, where none may import it.
    {"GrantWorkload"},
]
STAGES = {"IngestService", "VerifyService", "EnrichService", "GrantService", "ConsumptionResponder", "TokenStamping"}
STORE = {"EntitlementStore"}
RUNTIME = {"StageRuntime", "KafkaClient"}

# Edges that break a rule today, each with why (none left: add one only with its reason and issue).
KNOWN = {}


def targets(text):
    """name → (kind, path, [dependency target names]) for every target of Package.swift."""
    found = {}
    for m in re.finditer(r'\.(target|executableTarget|testTarget|systemLibrary)\(\s*name:\s*"([^"]+)"', text):
        kind, name = m.groups()
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        body = text[m.end():i]
        path = re.search(r'path:\s*"([^"]+)"', body)
        deps = re.search(r"dependencies:\s*\[(.*?)\]", body, re.S)
        names = re.findall(r'"([^"]+)"', deps.group(1)) if deps else []
        default = ("Tests/" if kind == "testTarget" else "Sources/") + name
        found[name] = (kind, path.group(1) if path else default, names)
    return found


def layer(name):
    for index, members in enumerate(LAYERS):
        if name in members:
            return index
    return None


def violations(found):
    """Every (target, dependency, rule) that breaks a rule."""
    out = []
    for name, (kind, path, deps) in found.items():
        if kind == "testTarget" or path.startswith("Tests/"):
            continue
        for dep in deps:
            if dep not in found:
                continue
            if found[dep][1].startswith("Tests/"):
                out.append((name, dep, "Sources → Tests"))
            elif name in STAGES and dep in STAGES:
                out.append((name, dep, "stage → stage"))
            elif name in STORE and dep in RUNTIME:
                out.append((name, dep, "store → runtime"))
            elif layer(name) is not None and layer(dep) is not None and layer(dep) >= layer(name):
                out.append((name, dep, f"layer {layer(name)} → layer {layer(dep)}"))
    return out


def main():
    checks = Checks("deploy layers")
    text = open(os.path.join(REPO, "Package.swift")).read()
    found = targets(text)
    library = {n for n, (k, p, _) in found.items() if k in ("target", "systemLibrary") and p.startswith("Sources/")}
    unplaced = sorted(library - set().union(*LAYERS))
    checks.check("every library target under Sources has a layer", not unplaced, ", ".join(unplaced))
    seen = violations(found)
    for name, dep, rule in seen:
        if (name, dep) in KNOWN:
            print(f"  known {name} → {dep} ({rule}): {KNOWN[(name, dep)]}")
        else:
            checks.check(f"{name} → {dep} breaks no rule", False, rule)
    new = [(n, d) for n, d, _ in seen if (n, d) not in KNOWN]
    checks.check("no target imports a module above its layer, another stage, the runtime from the store, or Tests from Sources", not new)
    gone = sorted(set(KNOWN) - {(n, d) for n, d, _ in seen})
    checks.check("every known exception still exists (remove the ones fixed)", not gone, str(gone))
    # Self-tests: each rule catches its bug put back.
    def caught(extra_text, rule):
        return any(r == rule for _, _, r in violations(targets(text + extra_text)))
    checks.check("self-test: a store importing the runtime is caught",
                 any(r == "store → runtime" for _, _, r in violations({**found, "EntitlementStore": ("target", "Sources/EntitlementStore", ["KafkaClient"]), "KafkaClient": found["KafkaClient"]})))
    checks.check("self-test: a stage importing another stage is caught",
                 caught('.target(name: "IngestService", dependencies: ["VerifyService"])', "stage → stage"))
    checks.check("self-test: Sources depending on Tests is caught",
                 caught('.executableTarget(name: "ingest", dependencies: ["TestSupport"], path: "Sources/Executables/ingest")', "Sources → Tests"))
    checks.check("self-test: a stage importing the grant workload is caught",
                 caught('.target(name: "GrantService", dependencies: ["GrantWorkload"])', "layer 5 → layer 6"))
    checks.check("self-test: a lower layer importing a higher one is caught",
                 caught('.target(name: "PipelineRecords", dependencies: ["StageRuntime"])', "layer 2 → layer 3"))
    checks.finish()


if __name__ == "__main__":
    main()
