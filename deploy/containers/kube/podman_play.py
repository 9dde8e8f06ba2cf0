#!/usr/bin/env python3
"""TEST ONLY (deploy/containers/kube-test): turns rendered Kubernetes YAML into what `podman kube
play` (podman 4.3) can run, keeping every pod spec as rendered except where podman cannot follow:

  kept as is     Deployments (one replica each), Pods, ConfigMaps (one file each, passed with --configmap)
  converted      a Job's and a CronJob's pod template -> a Pod of the same spec (restartPolicy Never),
                 run to completion by the test;
                 a Deployment's init containers -> a Pod of the same pod spec that runs them first
                 (podman 4.3 races removing a finished init container: "cannot remove container ...
                 as it is running"), and the Deployment without them;
                 Secret volumes -> hostPath directories holding the Secret's keys (podman 4.3 takes no
                 `kind: Secret` and writes a podman secret's `data` into a volume without decoding it),
                 with the Secret volume's items, defaultMode and the pod's fsGroup;
                 an env var from the downward API's metadata.namespace -> the rendered namespace as
                 its value (podman 4.3 knows metadata.name but refuses metadata.namespace; it does not
                 expand $(VAR) in values either, so OTEL_RESOURCE_ATTRIBUTES stays literal text, unused
                 while tracing is off);
                 an env var from a Secret's key (secretKeyRef) -> that key's value read from the
                 test's secrets directory (podman 4.3 looks it up among podman secrets only);
                 a container's envFrom ConfigMaps, when its env sets one of their keys too -> env
                 entries, env's own value kept (Kubernetes lets env win; podman 4.3 lets envFrom win)
  removed        probes (podman runs none without systemd: the test curls each readiness endpoint
                 itself), the preStop `sleep` handler (unknown to podman 4.3), and the kinds podman
                 does not run: HorizontalPodAutoscaler, PodDisruptionBudget, Ingress, Service,
                 Namespace, ScaledObject, TriggerAuthentication, Secret
  added          hostPort + hostIP 127.0.0.1 on the first port of the workloads named by --publish;
                 every other port is dropped (podman 4.3 publishes a containerPort that has no
                 hostPort on all interfaces)

Writes OUT/configmap-<name>.yaml (listed in OUT/configmaps.txt), OUT/<phase>-<name>.yaml for each runnable unit and OUT/plan.json
(units in start order, readiness endpoints, what was removed or converted)."""
import argparse
import copy
import json
import os
import sys

import yaml

NOT_RUN = {"HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress", "Service", "Namespace", "ScaledObject",
           "TriggerAuthentication", "Secret", "NetworkPolicy", "ServiceAccount"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--in", dest="inputs", action="append", required=True, help="rendered YAML (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--secrets", required=True, help="directory with one directory per Secret, one file per key")
    ap.add_argument("--publish", default="", help="workload=hostPort,… (first container port)")
    ap.add_argument("--host-ip", default="127.0.0.1")
    args = ap.parse_args()
    publish = dict(p.split("=") for p in args.publish.split(",") if p)
    docs = [d for path in args.inputs for d in yaml.safe_load_all(open(path)) if d]
    os.makedirs(args.out, exist_ok=True)
    plan = {"units": [], "readiness": [], "removed": [], "converted": [], "configmaps": [], "secret_dirs": []}
    configmaps = [d for d in docs if d["kind"] == "ConfigMap"]
    plan["configmaps"] = [c["metadata"]["name"] for c in configmaps]
    args.configmap_data = {c["metadata"]["name"]: c.get("data", {}) for c in configmaps}
    # podman 4.3 reads one ConfigMap per --configmap file: one file each, listed in configmaps.txt.
    paths = []
    for c in configmaps:
        paths.append(os.path.join(args.out, f"configmap-{c['metadata']['name']}.yaml"))
        write(paths[-1], [c])
    with open(os.path.join(args.out, "configmaps.txt"), "w") as f:
        f.write(",".join(paths))
    for d in docs:
        kind, name = d["kind"], d["metadata"]["name"]
        if kind not in NOT_RUN:
            namespace_values(d, plan)
        if kind in NOT_RUN:
            plan["removed"].append(f"{kind}/{name}")
        elif kind == "Deployment":
            deployment(d, args, publish, plan)
        elif kind in ("Job", "CronJob"):
            template = d["spec"]["template"] if kind == "Job" else d["spec"]["jobTemplate"]["spec"]["template"]
            pod = as_pod(name, template, args, publish, plan, once=True)
            plan["converted"].append(f"{kind}/{name} -> Pod/{name} (its pod template, run once to completion)")
            unit(plan, args, "job" if kind == "Job" else "cronjob", name, [pod], [container_name(pod)])
        elif kind == "Pod":
            pod = as_pod(name, d, args, publish, plan, once=d["spec"].get("restartPolicy") == "Never")
            unit(plan, args, "pod", name, [pod], [])
        elif kind != "ConfigMap":
            sys.exit(f"podman_play: no rule for {kind}/{name}")
    with open(os.path.join(args.out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=2)


def namespace_values(doc, plan):
    """Each env var the downward API sets from metadata.namespace gets the namespace the render
    put the workload in, as its plain value: what the kubelet would set."""
    kind = doc["kind"]
    template = {"Deployment": lambda: doc["spec"]["template"], "Job": lambda: doc["spec"]["template"],
                "CronJob": lambda: doc["spec"]["jobTemplate"]["spec"]["template"], "Pod": lambda: doc}.get(kind)
    if template is None:
        return
    spec = template()["spec"]
    namespace = doc["metadata"].get("namespace", "default")
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        for e in c.get("env", []):
            if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                e.pop("valueFrom")
                e["value"] = namespace
                plan["converted"].append(f"{kind}/{doc['metadata']['name']} {c['name']}: {e['name']} from metadata.namespace -> {namespace!r}")


def container_name(pod):
    # podman names a Pod's container <pod>-<container>
    return f"{pod['metadata']['name']}-{pod['spec']['containers'][0]['name']}"


def unit(plan, args, phase, name, docs, waits):
    path = os.path.join(args.out, f"{phase}-{name}.yaml")
    write(path, docs)
    plan["units"].append({"phase": phase, "name": name, "file": path, "wait": waits,
                          "pods": [pod_name(d) for d in docs]})


def pod_name(doc):
    return f"{doc['metadata']['name']}-pod-0" if doc["kind"] == "Deployment" else doc["metadata"]["name"]


def deployment(d, args, publish, plan):
    name = d["metadata"]["name"]
    # The operator's toolbox is kept at 0 replicas and scaled to 1 to run commands: the test does that.
    phase = "toolbox" if d["spec"].get("replicas") == 0 else "deployment"
    if phase == "toolbox":
        plan["converted"].append(f"Deployment/{name} (replicas 0) -> 1 replica, as an operator scales it to run commands")
    d = copy.deepcopy(d)
    d["spec"]["replicas"] = 1
    template = d["spec"]["template"]
    spec = template["spec"]
    inits = spec.pop("initContainers", [])
    if inits:
        # The init containers, in order, as one pod of the same spec that runs to completion first.
        for c in inits:
            init_pod = {"metadata": copy.deepcopy(template["metadata"]), "spec": dict(copy.deepcopy(spec), containers=[c])}
            pname = f"{name}-init-{c['name']}"
            pod = as_pod(pname, init_pod, args, {}, plan, once=True)
            plan["converted"].append(f"Deployment/{name} initContainer {c['name']} -> Pod/{pname} (same pod spec), run before {name}")
            unit(plan, args, "init", pname, [pod], [container_name(pod)])
    prepare_spec(name, template, args, publish, plan)
    unit(plan, args, phase, name, [d], [])


def as_pod(name, template, args, publish, plan, once):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": dict(template.get("metadata", {}).get("labels", {})),
                        "annotations": dict(template.get("metadata", {}).get("annotations", {}))},
           "spec": copy.deepcopy(template["spec"])}
    if once:
        pod["spec"]["restartPolicy"] = "Never"
    prepare_spec(name, pod, args, publish, plan)
    return pod


def prepare_spec(name, template, args, publish, plan):
    spec = template["spec"]
    containers = spec.get("containers", [])
    for c in spec.get("initContainers", []) + containers:
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        ready = c.pop("readinessProbe", None)
        for probe in ("startupProbe", "livenessProbe"):
            c.pop(probe, None)
        if ready and "httpGet" in ready:
            port = ready["httpGet"]["port"]
            plan["readiness"].append({"workload": name, "container": c["name"], "path": ready["httpGet"]["path"],
                                      "containerPort": ports.get(port, port)})
        if c.pop("lifecycle", None):
            plan["removed"].append(f"{name}/{c['name']}: lifecycle (preStop sleep; podman 4.3 has no sleep handler)")
    if name in publish and containers and containers[0].get("ports"):
        p = containers[0]["ports"][0]
        p["hostPort"] = int(publish[name])
        p["hostIP"] = args.host_ip
        for r in plan["readiness"]:
            if r["workload"] == name and r["containerPort"] == p["containerPort"]:
                r["hostPort"] = p["hostPort"]
    # podman 4.3 publishes a containerPort without hostPort on every interface under the same
    # number: only the ports the test publishes on 127.0.0.1 stay (pods reach each other anyway).
    for c in spec.get("initContainers", []) + containers:
        if c.get("ports"):
            c["ports"] = [p for p in c["ports"] if "hostPort" in p]
            if not c["ports"]:
                del c["ports"]
    for c in spec.get("initContainers", []) + containers:
        env_over_env_from(name, c, args, plan)
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                e["value"] = secret_key(name, ref["name"], ref["key"], args)
                del e["valueFrom"]
                plan["converted"].append(f"{name} {c['name']}: {e['name']} from Secret {ref['name']} key {ref['key']} -> its value")
    group = spec.get("securityContext", {}).get("fsGroup")
    for v in spec.get("volumes", []):
        if "secret" in v:
            v["hostPath"] = {"path": secret_dir(name, v, args, group, plan), "type": "Directory"}
            del v["secret"]


def env_over_env_from(workload, container, args, plan):
    """Kubernetes gives a variable set in env precedence over the same name from envFrom; podman 4.3
    does the opposite (grant's POSTGRES_PASSWORD_FILE, set in env by the grant-database-login
    component, came out as the ConfigMap's). When env sets a key of an envFrom ConfigMap, every
    envFrom ConfigMap becomes env entries in order (a later one wins, as in Kubernetes), then env's own."""
    sources = container.get("envFrom", [])
    own = [e["name"] for e in container.get("env", [])]
    refs = [s.get("configMapRef", {}).get("name") for s in sources]
    shadowed = {k for r in refs for k in args.configmap_data.get(r, {}) if k in own}
    if not shadowed:
        return
    if not all(refs) or any(r not in args.configmap_data for r in refs) or any("prefix" in s for s in sources):
        sys.exit(f"podman_play: {workload} {container['name']}: env overrides envFrom, which this script expands only for rendered ConfigMaps without a prefix")
    values = {}
    for r in refs:
        values.update(args.configmap_data[r])
    container["env"] = [{"name": k, "value": str(v)} for k, v in values.items() if k not in own] + container["env"]
    del container["envFrom"]
    plan["converted"].append(f"{workload} {container['name']}: envFrom {refs} -> env, env's own {sorted(shadowed)} kept (podman 4.3 lets envFrom win)")


def secret_key(workload, secret, key, args):
    """One key of a Secret the test made (a file in its directory), as the kubelet passes it in env."""
    path = os.path.join(args.secrets, secret, key)
    if not os.path.isfile(path):
        sys.exit(f"podman_play: {workload} reads key {key} of the Secret {secret}, which the test did not create ({path})")
    with open(path) as f:
        return f.read()


def secret_dir(workload, volume, args, group, plan):
    """The Secret's keys (or its items) as files in a directory of their own, as the kubelet lays
    out a Secret volume: mode defaultMode, group fsGroup."""
    src = volume["secret"]
    secret = src["secretName"]
    source = os.path.join(args.secrets, secret)
    if not os.path.isdir(source):
        sys.exit(f"podman_play: {workload} mounts the Secret {secret}, which the test did not create ({source})")
    target = os.path.join(args.out, "secret-volumes", f"{workload}-{volume['name']}")
    os.makedirs(target, exist_ok=True)
    items = src.get("items") or [{"key": k, "path": k} for k in sorted(os.listdir(source))]
    mode = src.get("defaultMode", 0o644)
    for item in items:
        with open(os.path.join(source, item["key"]), "rb") as f:
            data = f.read()
        path = os.path.join(target, item["path"])
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, item.get("mode", mode))
        if group is not None and os.geteuid() == 0:
            os.chown(path, 0, group)
    plan["secret_dirs"].append(target)
    return os.path.abspath(target)


def write(path, docs):
    with open(path, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)


if __name__ == "__main__":
    main()
