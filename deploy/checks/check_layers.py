"""The module layering, read from `swift package dump-package`: the layer of a library target is the
folder it lives in (`Sources/<n>-<Layer>/<Module>`, the map stated once in Package.swift's `targets`),
and a target may import only targets of a strictly lower layer (so a stage never imports another
stage, which sits in its own layer); the store never imports the stage runtime; nothing under
Sources depends on a target under Tests; Package.swift lists the library targets by layer.

Edges that break a rule today are listed in KNOWN with the reason they still exist; a new one fails,
and so does a listed one that has gone (so the list only shrinks)."""
import os
import re

from checklib import REPO, Checks, dump_package

LAYER_FOLDER = re.compile(r"^Sources/(\d+)-[A-Za-z]+/[^/]+$")
STORE = {"EntitlementStore"}
RUNTIME = {"StageRuntime", "KafkaClient"}

# Edges that break a rule today, each with why (none left: add one only with its reason and issue).
KNOWN = {}


def targets(manifest):
    """name → (kind, path, [dependency target names]) for every target of the manifest, in its order."""
    found = {}
    for t in manifest["targets"]:
        kind = t["type"]
        default = ("Tests/" if kind == "test" else "Sources/") + t["name"]
        deps = []
        for dep in t["dependencies"]:
            (how, value), = dep.items()
            if how in ("byName", "target"):
                deps.append(value[0])
        found[t["name"]] = (kind, t.get("path") or default, deps)
    return found


def layer(path):
    """The layer number of a library target's folder, None outside `Sources/<n>-<Layer>/`."""
    m = LAYER_FOLDER.match(path)
    return int(m.group(1)) if m else None


def violations(found):
    """Every (target, dependency, rule) that breaks a rule."""
    out = []
    for name, (kind, path, deps) in found.items():
        if kind == "test" or path.startswith("Tests/"):
            continue
        for dep in deps:
            if dep not in found:
                continue
            mine, theirs = layer(path), layer(found[dep][1])
            if found[dep][1].startswith("Tests/"):
                out.append((name, dep, "Sources → Tests"))
            elif name in STORE and dep in RUNTIME:
                out.append((name, dep, "store → runtime"))
            elif mine is not None and theirs is not None and theirs >= mine:
                out.append((name, dep, f"layer {mine} → layer {theirs}"))
    return out


def main():
    checks = Checks("deploy layers")
    found = targets(dump_package())
    library = {n: p for n, (k, p, _) in found.items() if k in ("regular", "system") and p.startswith("Sources/")}
    unplaced = sorted(n for n, p in library.items() if layer(p) is None)
    checks.check("every library target under Sources lives in a layer folder (Sources/<n>-<Layer>/<Module>)", not unplaced, ", ".join(unplaced))
    folders = sorted({p.split("/")[1] for p in library.values() if layer(p) is not None})
    numbers = [int(f.split("-")[0]) for f in folders]
    checks.check("the layer folders are numbered 0, 1, 2, … without a gap or a repeat", numbers == list(range(len(numbers))), str(folders))
    on_disk = sorted(d for d in os.listdir(os.path.join(REPO, "Sources")) if d != "Executables")
    checks.check("every folder of Sources is a layer of Package.swift (or Executables)", on_disk == folders, f"{on_disk} vs {folders}")
    in_order = [layer(library[n]) for n in found if n in library]
    checks.check("Package.swift lists the library targets by layer, lowest first", in_order == sorted(in_order), str(in_order))
    seen = violations(found)
    for name, dep, rule in seen:
        if (name, dep) in KNOWN:
            print(f"  known {name} → {dep} ({rule}): {KNOWN[(name, dep)]}")
        else:
            checks.check(f"{name} → {dep} breaks no rule", False, rule)
    new = [(n, d) for n, d, _ in seen if (n, d) not in KNOWN]
    checks.check("no target imports its own layer or one above, the runtime from the store, or Tests from Sources", not new)
    gone = sorted(set(KNOWN) - {(n, d) for n, d, _ in seen})
    checks.check("every known exception still exists (remove the ones fixed)", not gone, str(gone))

    # Self-tests: each rule catches its bug put back.
    def caught(name, deps, rule, path=None):
        kind, old_path, _ = found[name]
        edited = {**found, name: (kind, path or old_path, deps)}
        return any(r == rule and n == name for n, _, r in violations(edited))

    checks.check("self-test: the store importing the runtime is caught", caught("EntitlementStore", ["StageRuntime"], "store → runtime"))
    checks.check("self-test: a stage importing another stage is caught", caught("IngestService", ["VerifyService"], "layer 5 → layer 5"))
    checks.check("self-test: Sources depending on Tests is caught", caught("ingest", ["TestSupport"], "Sources → Tests"))
    checks.check("self-test: a stage importing the grant workload is caught", caught("GrantService", ["GrantWorkload"], "layer 5 → layer 6"))
    checks.check("self-test: a lower layer importing a higher one is caught", caught("PipelineRecords", ["StageRuntime"], "layer 2 → layer 3"))
    checks.check("self-test: a module moved down a layer is judged by its folder",
                 caught("StageRuntime", ["KafkaClient"], "layer 2 → layer 2", path="Sources/2-Clients/StageRuntime"))
    checks.finish()


if __name__ == "__main__":
    main()
