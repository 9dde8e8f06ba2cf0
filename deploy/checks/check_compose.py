#!/usr/bin/env python3
"""Checks deploy/compose and deploy/docker/Dockerfile against the repository, on the configuration
compose itself renders (`docker-compose -f … config`, Debian's docker-compose, every profile; no
daemon needed): compose.yaml alone as a deployment gives it, compose.yaml with compose.demo.yaml and
demo.env (the demo), and with compose.local.yaml as deploy/containers/run runs it. Every service's
build (context, Dockerfile, target), command or entrypoint executable (an executable product of
Package.swift, or a tool the image installs), environment (env files exist, variables are ones the
sources read), secrets, mounts and health checks refer to things that exist, and the demo's
settings agree with each other; what compose.yaml takes from the deployment is seen by rendering it
with and without those variables.

These are the cheap static checks; deploy/containers/test builds the images and runs the cluster.
External images are checked for a pinned tag, and the tools their commands use against what those
official images are documented to ship."""
import glob
import ipaddress
import os
import re
import shlex
import subprocess
import tempfile

import yaml
from checklib import (
    DOCKERFILE,
    REPO,
    Checks,
    appstorectl_subcommands,
    executable_products,
    read_env_file,
    source_strings,
    stack_env,
)

COMPOSE_DIR = os.path.join(REPO, "deploy", "compose")
# Debian's docker-compose, as deploy/containers/lib.sh runs it (COMPOSE overrides it there too).
COMPOSE = os.environ.get("COMPOSE", "/usr/bin/docker-compose")
PROFILES = ("ops", "monitoring", "tracing")
PRODUCTION_FILES = ("compose.yaml",)
DEMO_FILES = ("compose.yaml", "compose.demo.yaml")
LOCAL_FILES = DEMO_FILES + ("compose.local.yaml",)  # deploy/containers/run's
DEMO_ENV = os.path.join(COMPOSE_DIR, "demo.env")
# What compose.yaml requires from the deployment (${NAME:?…}), for rendering it alone.
REQUIRED = {"APPSTORE_APPS": "com.example.check:1234567890:Production",
            "APPSTORE_API_CREDENTIALS": "com.example.check:issuer:KEYID0001:/run/secrets/appstore-api-key",
            "INGEST_UPLOAD_AUTH": "jwt"}
# Settings an operator gives in the environment: each must reach the stages as given.
PROBE = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.check.invalid:4318", "OTEL_TRACES_SAMPLER": "check_sampler",
         "INGEST_UPLOAD_AUTH": "check-mode"}
# Tools the official images ship (their documentation), for commands that run inside them.
EXTERNAL_TOOLS = {
    "apache/kafka": {"/opt/kafka/bin/kafka-broker-api-versions.sh", "/opt/kafka/bin/kafka-topics.sh", "/bin/bash"},
    "postgres": {"pg_isready", "psql", "sh"},
    "nginx": {"bash", "nginx"},
    "prom/prometheus": {"wget", "prometheus", "promtool"},  # busybox-based
    "grafana/grafana": {"wget"},
}
MONITORING = ("prometheus", "grafana")  # profile monitoring
TRACING = "otel-collector"  # profile tracing
STAGES = ("ingest", "verify", "enrich", "grant")
# What each stage takes from the operator's environment for tracing (docs/configuration.md, "Tracing").
TRACING_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER")
COLLECTOR_IMAGE = "otel/opentelemetry-collector-contrib"
checks = Checks("deploy compose")


# ---- the Dockerfile -----------------------------------------------------------------------------

def parse_dockerfile(path):
    """Stages by name: base image, copied executables, entrypoint, healthcheck, env, apt packages."""
    text = re.sub(r"\\\n", " ", open(path).read())
    args, stages, cur = {}, {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "ARG" and "=" in rest:
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip().strip('"')
        elif word == "FROM":
            m = re.match(r"(\S+)\s+AS\s+(\S+)", rest, re.I)
            base = m.group(1)
            base = re.sub(r"\$\{(\w+)\}", lambda g: args.get(g.group(1), ""), base)
            parent = stages.get(base, {})
            cur = {"base": base, "execs": set(parent.get("execs", ())), "apt": set(parent.get("apt", ())),
                   "entrypoint": parent.get("entrypoint"), "healthcheck": parent.get("healthcheck"),
                   "env": dict(parent.get("env", {})), "user": parent.get("user")}
            stages[m.group(2)] = cur
        elif cur is None:
            continue
        elif word == "COPY" and "--from=binaries" in rest and "/usr/local/bin/" in rest:
            cur["execs"].add(os.path.basename(rest.split()[-2]))
        elif word == "RUN" and "apt-get install" in rest:
            pkgs = rest.split("apt-get install", 1)[1].split("&&")[0].split()
            cur["apt"].update(p for p in pkgs if not p.startswith("-"))
        elif word == "ENTRYPOINT":
            cur["entrypoint"] = yaml.safe_load(rest)
        elif word == "HEALTHCHECK":
            cur["healthcheck"] = None if rest.strip() == "NONE" else rest
        elif word == "ENV":
            for tok in shlex.split(rest):
                k, _, v = tok.partition("=")
                cur["env"][k] = v
        elif word == "USER":
            cur["user"] = rest.strip()
    return args, stages


def check_dockerfile(args, stages, products):
    listed = args.get("PRODUCTS", "").split()
    missing = [p for p in listed if p not in products]
    checks.check("Dockerfile: every executable in PRODUCTS is an executable product of Package.swift",
                 not missing, f"missing executable products: {', '.join(missing)}")
    build = stages.get("compile", {})
    checks.check("Dockerfile: the compile stage is an official Swift image on Ubuntu 24.04 (noble) with librdkafka-dev",
                 re.match(r"swift:[\d.]+-noble$", build.get("base", "")) is not None and "librdkafka-dev" in build.get("apt", ()),
                 build.get("base", ""))
    checks.check("Dockerfile: binaries compiled by default (BINARIES=compile), or prebuilt from .local/image-staging",
                 args.get("BINARIES") == "compile" and stages.get("binaries", {}).get("base") == "compile"
                 and stages.get("prebuilt", {}).get("base") == "scratch")
    runtime = stages.get("runtime", {})
    checks.check("Dockerfile: runtime is ubuntu:24.04 with librdkafka1, as a non-root user",
                 runtime.get("base") == "ubuntu:24.04" and "librdkafka1" in runtime.get("apt", ())
                 and runtime.get("user") not in (None, "root", "0", "0:0"), str(runtime.get("base")))
    text = open(DOCKERFILE).read()
    checks.check("Dockerfile: builds with `swift build -c release --static-swift-stdlib`, as deploy/local/lib.sh does",
                 "swift build -c release --static-swift-stdlib" in text
                 and "release_flags=(-c release --static-swift-stdlib " in open(os.path.join(REPO, "deploy", "local", "lib.sh")).read())
    secretish = re.findall(r"^(?:ARG|ENV)\s+\S*(?:PASSWORD|SECRET|TOKEN|PRIVATE)\S*", text, re.M | re.I)
    checks.check("Dockerfile: no secrets as ARG or ENV", not secretish, str(secretish))
    for name, st in stages.items():
        if name in ("compile", "prebuilt", "binaries", "runtime"):
            continue
        copied = sorted(st["execs"] - stages.get("runtime", {}).get("execs", set()))
        checks.check(f"Dockerfile target {name}: copies only executables from PRODUCTS",
                     bool(copied) and all(e in listed for e in copied), str(copied))
        ep = st.get("entrypoint") or []
        checks.check(f"Dockerfile target {name}: ENTRYPOINT {ep} is its executable", ep[:1] == [name] and name in st["execs"])
        if name != "appstorectl":
            hc = st.get("healthcheck") or ""
            checks.check(f"Dockerfile target {name}: HEALTHCHECK GETs /health on HTTP_PORT with curl",
                         "/health" in hc and "${HTTP_PORT}" in hc and "curl" in st["apt"] and st["env"].get("HTTP_PORT", "").isdigit(), hc)
    ignore = open(DOCKERFILE + ".dockerignore").read()
    allowed = [line.strip() for line in ignore.splitlines() if line.strip().startswith("!")]
    checks.check("Dockerfile.dockerignore: lets in the sources, schemas and the staged build, nothing else",
                 "*" in [line.strip() for line in ignore.splitlines()] and sorted(allowed) == sorted(
                     ["!Package.swift", "!Sources/**", "!Tests/**", "!schemas/**",
                      "!deploy/docker/stage-binaries", "!.local/image-staging/**"]), str(allowed))
    for target in ("grant", "appstorectl"):
        copied = re.search(rf"FROM runtime AS {target}\n(?:(?!FROM ).*\n)*?COPY --from=binaries /staging/share/appstore-entitlements /usr/share/appstore-entitlements", text)
        checks.check(f"Dockerfile target {target}: carries the migrations and the topic catalogue", copied is not None)


# ---- compose's rendering ------------------------------------------------------------------------

def compose_config(files, env=None, env_file=None):
    """compose's own rendering of FILES (names in deploy/compose, or paths; relative paths in them
    are deploy/compose's) with every profile: (configuration, None), or (None, compose's error).
    Compose interpolates from `env` and `env_file` only: no variable of the checks' shell leaks in."""
    with tempfile.TemporaryDirectory() as home:
        if env_file is None:
            env_file = os.path.join(home, "empty.env")
            open(env_file, "w").close()
        cmd = [COMPOSE]
        for f in files:
            cmd += ["-f", os.path.join(COMPOSE_DIR, f)]
        for profile in PROFILES:
            cmd += ["--profile", profile]
        cmd += ["--project-directory", COMPOSE_DIR, "--env-file", env_file, "config"]
        out = subprocess.run(cmd, env=dict(env or {}, PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=home),
                             capture_output=True, text=True, cwd=COMPOSE_DIR)
    if out.returncode != 0:
        return None, (out.stderr or out.stdout).strip()
    return yaml.safe_load(out.stdout), None


def rendered(what, files, env=None, env_file=None):
    config, error = compose_config(files, env, env_file)
    checks.check(f"docker-compose config renders {what}", config is not None, (error or "")[-500:])
    return config


def containers_run_env():
    """What deploy/containers/run gives compose besides demo.env (its ports and month from deploy/stack.env)."""
    stack = stack_env()
    return {"COMPOSE_PROJECT_NAME": "appstore-entitlements", "IMAGE_TAG": "local",
            "GATEWAY_PUBLISH": f"127.0.0.1:{stack['CONTAINERS_GATEWAY_PORT']}", "SIM_PUBLISH_PORT": stack["CONTAINERS_SIM_PORT"],
            "GRANT_EXPIRY_LEEWAY_S": str(int(stack["RUN_MONTH_SECONDS"]) // 20)}


def secret_names(svc):
    """The secrets a rendered service mounts (compose writes each as {source: name})."""
    return [s["source"] if isinstance(s, dict) else s for s in svc.get("secrets") or []]


def mounts(svc):
    """(source, target) of each volume of a rendered service; a bind mount's source is an absolute path."""
    out = []
    for v in svc.get("volumes") or []:
        if isinstance(v, dict):
            out.append((str(v.get("source", "")), str(v.get("target", ""))))
        else:
            parts = v.split(":")
            out.append((parts[0], parts[1] if len(parts) > 1 else parts[0]))
    return out


def check_env_files():
    """Every env_file a compose file names exists (compose's rendering has merged them into each
    service's environment)."""
    for f in LOCAL_FILES:
        for name, svc in (yaml.safe_load(open(os.path.join(COMPOSE_DIR, f))).get("services") or {}).items():
            for env_file in svc.get("env_file") or []:
                checks.check(f"{name}: env file {env_file} exists", os.path.isfile(os.path.join(COMPOSE_DIR, env_file)))


# ---- compose.yaml -------------------------------------------------------------------------------

def made_secret_files():
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([os.path.join(COMPOSE_DIR, "make-secrets")], env=dict(os.environ, SECRETS_DIR=d),
                             capture_output=True, text=True)
        checks.check("make-secrets creates the local secrets", out.returncode == 0, out.stderr[-300:])
        return set(os.listdir(d))


def service_tools(svc, stages):
    """(image family, executable the service runs, tools available in its image)."""
    if "build" in svc:
        st = stages.get(svc["build"].get("target"), {})
        ep = svc.get("entrypoint") or st.get("entrypoint") or []
        return "local", (ep[0] if ep else None), st.get("execs", set()) | st.get("apt", set())
    image = svc.get("image", "")
    family = image.rsplit(":", 1)[0]
    ep = svc.get("entrypoint") or []
    return family, (ep[0] if ep else None), EXTERNAL_TOOLS.get(family, set())


def check_services(compose, stages, products, known_vars):
    services = compose["services"]
    secret_files = made_secret_files()
    for name, s in compose.get("secrets", {}).items():
        checks.check(f"secret {name}: make-secrets creates {os.path.relpath(s['file'], REPO)}", os.path.basename(s["file"]) in secret_files)
    missing_vars = set()
    for name, svc in services.items():
        family, exe, tools = service_tools(svc, stages)
        if "build" in svc:
            b = svc["build"]
            ctx = os.path.normpath(os.path.join(COMPOSE_DIR, b["context"]))
            ok = os.path.isfile(os.path.join(ctx, "Package.swift")) and os.path.normpath(os.path.join(ctx, b["dockerfile"])) == DOCKERFILE
            checks.check(f"{name}: builds deploy/docker/Dockerfile from the repository root", ok)
            checks.check(f"{name}: Dockerfile target {b.get('target')} exists", b.get("target") in stages)
            if exe in stages.get(b.get("target"), {}).get("execs", ()):
                checks.check(f"{name}: runs {exe}, an executable product of Package.swift", exe in products,
                             f"missing executable product: {exe}")
                if exe == "appstorectl" and svc.get("command"):
                    sub = svc["command"][0]
                    checks.check(f"{name}: `appstorectl {sub}` is a subcommand", sub in appstorectl_subcommands(),
                                 f"appstorectl has {sorted(appstorectl_subcommands())}")
            else:
                checks.check(f"{name}: runs {exe}, which its image installs", exe in tools, f"image has {sorted(tools)}")
        else:
            image = svc.get("image", "")
            checks.check(f"{name}: image {image} is pinned to a version", re.search(r":v?[0-9][\w.-]*$", image) is not None)
            if exe:
                checks.check(f"{name}: runs {exe}, which {family} ships", exe in tools)
        env = dict(svc.get("environment") or {})  # its env files merged in by compose
        if "build" in svc:
            unknown = sorted(k for k in env if k not in known_vars and not k.startswith("KAFKA_PROP_"))
            missing_vars.update(unknown)
            checks.check(f"{name}: every variable it is given is read by the sources", not unknown,
                         f"no source reads: {', '.join(unknown)}")
            if "HTTP_PORT" in env:
                checks.check(f"{name}: HTTP_PORT {env['HTTP_PORT']} matches its image's", env["HTTP_PORT"] ==
                             stages.get(svc["build"]["target"], {}).get("env", {}).get("HTTP_PORT"))
        check_health(name, svc, stages, family, tools)
        for dep, cond in (svc.get("depends_on") or {}).items():
            checks.check(f"{name}: depends on service {dep}, which exists", dep in services)
            c = cond.get("condition") if isinstance(cond, dict) else None
            if c == "service_healthy" and dep in services:
                checks.check(f"{name}: {dep} has a health check to wait for", has_health(services[dep], stages))
            if c == "service_completed_successfully" and dep in services:
                checks.check(f"{name}: {dep} is a one-shot job", services[dep].get("restart") == "no")
        for sec in secret_names(svc):
            checks.check(f"{name}: secret {sec} is defined", sec in compose.get("secrets", {}))
        for src, _ in mounts(svc):
            if os.path.isabs(src):
                checks.check(f"{name}: mounted {os.path.relpath(src, REPO)} exists", os.path.exists(src))
            else:
                checks.check(f"{name}: volume {src} is declared", src in (compose.get("volumes") or {}))
        if "stop_grace_period" in svc:
            grace = int(svc["stop_grace_period"].rstrip("s"))
            shutdown = int(env.get("SHUTDOWN_TIMEOUT_MS", 25000)) / 1000
            checks.check(f"{name}: stop_grace_period {grace}s > SHUTDOWN_TIMEOUT_MS + 5 s", grace > shutdown + 5)
    return missing_vars


def has_health(svc, stages):
    if "healthcheck" in svc:
        return True
    return bool("build" in svc and stages.get(svc["build"].get("target"), {}).get("healthcheck"))


def check_health(name, svc, stages, family, tools):
    hc = svc.get("healthcheck")
    if hc:
        test = hc["test"]
        tool = test[1] if test[0] == "CMD" else None
        checks.check(f"{name}: health check runs {tool}, which its image has", tool in tools)
    elif "build" in svc and svc.get("restart") != "no":
        image_hc = stages.get(svc["build"].get("target"), {}).get("healthcheck")
        # The probe server's source, wherever the layers put its module.
        probe = "".join(open(f).read() for f in glob.glob(os.path.join(REPO, "Sources", "**", "StageRuntime", "ProbeServer.swift"),
                                                          recursive=True))
        checks.check(f"{name}: image HEALTHCHECK on /health, a route the stages serve",
                     bool(image_hc) and '"/health"' in probe)


def check_topics(compose):
    topics = compose["services"].get("topics", {})
    checks.check("topics: runs `appstorectl topics apply` (the catalogue in the image) before every stage",
                 topics.get("command", [])[:2] == ["topics", "apply"] and topics.get("build", {}).get("target") == "appstorectl"
                 and all("topics" in (compose["services"][s].get("depends_on") or {}) for s in ("ingest", "verify", "enrich", "grant")))
    grant = compose["services"]["grant"]
    checks.check("grant: starts after migrate, which applies the migrations", (grant.get("depends_on") or {}).get("migrate", {}).get(
        "condition") == "service_completed_successfully" and compose["services"].get("migrate", {}).get("command") == ["migrate"])
    problems = grant_login_problems(compose)
    checks.check("grant: logs in as its own role (db-roles makes it after migrate), never as the owner, without the owner's password",
                 not problems, "; ".join(problems))
    owner_grant = dict(compose, services=dict(compose["services"], grant=dict(
        grant, environment=dict(grant.get("environment") or {}, POSTGRES_USER="appstore"))))
    checks.check("self-test: grant logging in as the owner is caught", bool(grant_login_problems(owner_grant)))
    with_owner_secret = dict(compose, services=dict(compose["services"], grant=dict(
        grant, secrets=list(grant.get("secrets") or []) + [{"source": "postgres-password"}])))
    checks.check("self-test: grant holding the owner's password is caught", bool(grant_login_problems(with_owner_secret)))


def grant_login_problems(compose):
    """What lets grant act as the database's owner: its POSTGRES_USER (as rendered: its environment
    wins over postgres.env) being the owner Postgres was initialised with, the owner's password
    mounted in it, or its login not made by db-roles after the migrations."""
    services = compose["services"]
    grant, owner = services["grant"], (services["postgres"].get("environment") or {}).get("POSTGRES_USER")
    env = grant.get("environment") or {}
    problems = []
    if env.get("POSTGRES_USER") in (None, "", owner):
        problems.append(f"grant logs in as {env.get('POSTGRES_USER')!r}, the owner")
    if "postgres-password" in secret_names(grant):
        problems.append("grant mounts the owner's password (postgres-password)")
    roles = services.get("db-roles", {})
    if (grant.get("depends_on") or {}).get("db-roles", {}).get("condition") != "service_completed_successfully" or (
            (roles.get("depends_on") or {}).get("migrate", {}).get("condition") != "service_completed_successfully"):
        problems.append("grant does not start after db-roles, or db-roles not after migrate")
    return problems


GATEWAY_LISTS = os.path.join(REPO, "deploy", "gateway", "entrypoint.d", "25-gateway-address-lists.sh")
APPLE_NETWORK = ipaddress.ip_network("17.0.0.0/8")
# Docker's default address pools (172.17.0.0/16 to 172.31.0.0/16, then 192.168.0.0/16 in /20s): a
# compose network's subnet, and so the simulator's address, is taken from these.
DOCKER_POOLS = [ipaddress.ip_network("172.16.0.0/12"), ipaddress.ip_network("192.168.0.0/16")]


def networks(value):
    """The networks of a space- or comma-separated address list, or None when one is not an address."""
    try:
        return [ipaddress.ip_network(v, strict=False) for v in re.split(r"[\s,]+", value.strip()) if v]
    except ValueError:
        return None


def gateway_problems(gw, demo):
    """What is wrong with the gateway service's address settings, as rendered without the operator
    setting them: production (demo False) accepts notifications from Apple's 17.0.0.0/8 only and
    trusts no proxy by default; the demo accepts them from the compose network, where the simulator
    delivers from; both mount the script that renders the lists."""
    env = gw.get("environment") or {}
    problems = []
    allow = networks(str(env.get("GATEWAY_NOTIFICATION_ALLOW", "")))
    proxies = networks(str(env.get("GATEWAY_TRUSTED_PROXIES", "")))
    if not allow:
        problems.append(f"GATEWAY_NOTIFICATION_ALLOW {env.get('GATEWAY_NOTIFICATION_ALLOW')!r} is not a list of addresses")
    elif not demo and not all(n.version == 4 and n.subnet_of(APPLE_NETWORK) for n in allow):
        problems.append(f"GATEWAY_NOTIFICATION_ALLOW {env['GATEWAY_NOTIFICATION_ALLOW']!r} admits more than Apple's 17.0.0.0/8")
    elif demo and not all(any(p.version == n.version and p.subnet_of(n) for n in allow) for p in DOCKER_POOLS):
        problems.append(f"GATEWAY_NOTIFICATION_ALLOW {env['GATEWAY_NOTIFICATION_ALLOW']!r} does not cover the compose network "
                        f"(Docker's pools {', '.join(map(str, DOCKER_POOLS))}): the simulator's deliveries would get 403")
    if proxies is None:
        problems.append(f"GATEWAY_TRUSTED_PROXIES {env.get('GATEWAY_TRUSTED_PROXIES')!r} is not a list of addresses")
    elif any(n.prefixlen == 0 for n in proxies):
        problems.append("GATEWAY_TRUSTED_PROXIES trusts every address: any client could name its own")
    elif not demo and proxies:
        problems.append(f"GATEWAY_TRUSTED_PROXIES defaults to {env['GATEWAY_TRUSTED_PROXIES']!r}: trust no proxy unless one is there")
    sources = {target: src for src, target in mounts(gw)}
    script = sources.get("/docker-entrypoint.d/" + os.path.basename(GATEWAY_LISTS))
    if not script or os.path.normpath(os.path.join(COMPOSE_DIR, script)) != GATEWAY_LISTS:
        problems.append("the address lists script is not mounted in /docker-entrypoint.d: nginx cannot start without its include files")
    return problems


def check_gateway(compose, production):
    gw = compose["services"]["gateway"]
    template = open(os.path.join(REPO, "deploy", "gateway", "templates", "gateway.conf.template")).read()
    wanted = set(re.findall(r"\$\{(GATEWAY_\w+)\}", template)) | set(re.findall(r"\$\{(GATEWAY_\w+)-", open(GATEWAY_LISTS).read()))
    env = gw.get("environment", {})
    checks.check("gateway: sets exactly the GATEWAY_* variables of the template and the address lists script",
                 wanted == {k for k in env if k.startswith("GATEWAY_")}, f"template and script {sorted(wanted)} vs compose {sorted(env)}")
    host, _, port = env.get("GATEWAY_UPSTREAM", "").partition(":")
    ingest = compose["services"].get(host, {})
    checks.check("gateway: upstream is the ingest service on its HTTP_PORT", host == "ingest" and
                 str((ingest.get("environment") or {}).get("HTTP_PORT")) == port)
    for var in ("GATEWAY_TLS_CERT", "GATEWAY_TLS_KEY"):
        sec = env.get(var, "").removeprefix("/run/secrets/")
        checks.check(f"gateway: {var} is a mounted secret", sec in secret_names(gw))
    checks.check("gateway: the address lists script is executable (the image runs only executable scripts)", os.access(GATEWAY_LISTS, os.X_OK))
    prod_gw = production["services"]["gateway"]
    problems = gateway_problems(prod_gw, demo=False)
    checks.check("compose.yaml gateway: /v2/notifications from Apple's 17.0.0.0/8 only, no trusted proxy, the lists script mounted",
                 not problems, "; ".join(problems))
    problems = gateway_problems(gw, demo=True)
    checks.check("demo gateway: notifications accepted from the compose network, where the simulator delivers from",
                 not problems, "; ".join(problems))
    # Self-tests: each bug put back is refused.
    def with_env(g, **env):
        g = dict(g, environment=dict(g.get("environment") or {}, **env))
        return g
    checks.check("self-test: the gateway check refuses a production allow-list opened to every address",
                 bool(gateway_problems(with_env(prod_gw, GATEWAY_NOTIFICATION_ALLOW="0.0.0.0/0 ::/0"), demo=False)))
    checks.check("self-test: the gateway check refuses a production allow-list beyond 17.0.0.0/8",
                 bool(gateway_problems(with_env(prod_gw, GATEWAY_NOTIFICATION_ALLOW="17.0.0.0/8 10.0.0.0/8"), demo=False)))
    checks.check("self-test: the gateway check refuses a trusted proxy by default in production",
                 bool(gateway_problems(with_env(prod_gw, GATEWAY_TRUSTED_PROXIES="10.0.0.0/8"), demo=False)))
    checks.check("self-test: the gateway check refuses every address trusted as a proxy",
                 bool(gateway_problems(with_env(gw, GATEWAY_TRUSTED_PROXIES="0.0.0.0/0"), demo=True)))
    checks.check("self-test: the gateway check refuses a demo that keeps Apple's allow-list (the simulator would get 403)",
                 bool(gateway_problems(with_env(gw, GATEWAY_NOTIFICATION_ALLOW="17.0.0.0/8"), demo=True)))
    checks.check("self-test: the gateway check refuses a gateway without the address lists script",
                 bool(gateway_problems(dict(prod_gw, volumes=[v for v in prod_gw["volumes"] if "docker-entrypoint.d" not in v]), demo=False)))


def check_demo(compose, production):
    services = compose["services"]
    checks.check("compose.yaml: the simulated Apple is only in compose.demo.yaml",
                 "appstore-sim" not in production["services"] and "sim-trust" not in production["services"])
    others = [n for n, s in services.items() if s.get("profiles") and n != "ops"
              and not (n in MONITORING and s["profiles"] == ["monitoring"]) and not (n == TRACING and s["profiles"] == ["tracing"])]
    checks.check("compose: every service but ops and the monitoring and tracing profiles' runs without a profile", not others, str(others))
    demo = read_env_file(os.path.join(COMPOSE_DIR, "demo.env"))
    for stage in ("verify", "enrich", "grant"):
        checks.check(f"demo: {stage} starts after sim-trust copied the root it trusts",
                     (services[stage].get("depends_on") or {}).get("sim-trust", {}).get("condition") == "service_completed_successfully")
    sim_env = services["appstore-sim"].get("environment", {})
    checks.check("demo: appstore-sim listens on every interface (HTTP_HOST 0.0.0.0 in its image)",
                 parse_dockerfile(DOCKERFILE)[1].get("appstore-sim", {}).get("env", {}).get("HTTP_HOST") == "0.0.0.0")
    cred = demo.get("APPSTORE_API_CREDENTIALS", "").split(":")
    checks.check("demo.env: enrich's credentials name the key, issuer and key ID the simulator accepts",
                 len(cred) == 4 and cred[1] == demo.get("SIM_API_ISSUER_ID") and cred[2] == demo.get("SIM_API_KEY_ID")
                 and sim_env.get("SIM_API_KEY_FILE") == "/run/secrets/appstore-api-key"
                 and "appstore-api-key" in secret_names(services["appstore-sim"]))
    products = demo.get("ENTITLEMENTS_PRODUCTS_FILE", "")
    config = next((src for src, target in mounts(services["grant"]) if target == "/config"), "")
    checks.check(f"demo.env: the products file {products} is in the directory mounted at /config",
                 products.startswith("/config/") and os.path.isabs(config) and os.path.isfile(
                     os.path.join(config, products.removeprefix("/config/"))))
    ops_env = services["ops"].get("environment", {})  # its env files merged in by compose
    needed = {"KAFKA_BOOTSTRAP_SERVERS", "POSTGRES_HOST", "POSTGRES_PASSWORD_FILE", "APPSTORE_APPS", "APPSTORE_API_CREDENTIALS"}
    checks.check("ops: has the broker, database and App Store settings the recovery commands need",
                 needed <= set(ops_env) and {"postgres-password", "appstore-api-key"} <= set(secret_names(services["ops"])),
                 str(sorted(needed - set(ops_env))))
    trust = " ".join(services.get("sim-trust", {}).get("entrypoint", []))
    checks.check("demo.env: trusts the root file sim-trust writes", demo.get("APPSTORE_TRUSTED_ROOTS", "?") in trust)
    apps = demo.get("APPSTORE_APPS", "")
    checks.check("demo.env: APPSTORE_APPS is Sandbox only (the test root is never for Production)",
                 bool(apps) and "Production" not in apps and all(re.fullmatch(r"[^\s:,]+:\d*:Sandbox", e) for e in apps.split(",")))
    key = demo.get("APPSTORE_API_CREDENTIALS", "").split(":")[-1]
    checks.check("demo.env: the API key path is enrich's mounted secret",
                 key.startswith("/run/secrets/") and key.removeprefix("/run/secrets/") in secret_names(services["enrich"]), key)


def upload_auth_problems(unset_error, given, demo):
    """What is wrong with how ingest authenticates app uploads. compose.yaml must take
    INGEST_UPLOAD_AUTH from the deployment with no default, so no production falls back to open
    uploads: rendered without it, compose refuses (`unset_error`, its message naming the variable);
    rendered with it (`given`: PROBE's value), ingest gets that value, and APPSTORE_APPS, which none
    is checked against. The demo (`demo`, its rendering) may open uploads only for Sandbox-only apps."""
    problems = []
    if unset_error is None:
        problems.append("compose.yaml renders without INGEST_UPLOAD_AUTH: it has a default instead of being required "
                        "from the deployment (${INGEST_UPLOAD_AUTH:?...})")
    elif "INGEST_UPLOAD_AUTH" not in unset_error:
        problems.append(f"compose.yaml without INGEST_UPLOAD_AUTH fails for another reason: {unset_error[-200:]}")
    env = given["services"]["ingest"].get("environment") or {}
    if env.get("INGEST_UPLOAD_AUTH") != PROBE["INGEST_UPLOAD_AUTH"]:
        problems.append(f"ingest's INGEST_UPLOAD_AUTH is {env.get('INGEST_UPLOAD_AUTH')!r} when the deployment gives "
                        f"{PROBE['INGEST_UPLOAD_AUTH']!r}: not taken from the deployment")
    if "APPSTORE_APPS" not in env:
        problems.append("ingest is not given APPSTORE_APPS, which INGEST_UPLOAD_AUTH=none is checked against")
    demo_env = demo["services"]["ingest"].get("environment") or {}
    mode = demo_env.get("INGEST_UPLOAD_AUTH")
    apps = [e for e in str(demo_env.get("APPSTORE_APPS", "")).split(",") if e]
    if mode not in ("jwt", "hmac", "none"):
        problems.append(f"the demo's ingest has INGEST_UPLOAD_AUTH {mode!r}, not jwt, hmac or none: it would not start")
    elif mode == "none" and (not apps or not all(re.fullmatch(r"[^\s:,]+:\d*:Sandbox", e) for e in apps)):
        problems.append(f"the demo opens uploads (none) for apps that are not Sandbox-only ({demo_env.get('APPSTORE_APPS')!r}): "
                        "ingest would refuse to start")
    return problems


def check_uploads(given, compose):
    without = {k: v for k, v in REQUIRED.items() if k != "INGEST_UPLOAD_AUTH"}
    _, unset_error = compose_config(PRODUCTION_FILES, without)
    problems = upload_auth_problems(unset_error, given, compose)
    checks.check("ingest: INGEST_UPLOAD_AUTH required from the deployment (compose.yaml does not render without it, no default), "
                 "APPSTORE_APPS given; the demo opens uploads only for Sandbox-only apps", not problems, "; ".join(problems))
    # Self-tests: each mistake put back is caught; the first is compose.yaml itself with a default
    # for INGEST_UPLOAD_AUTH, rendered by compose.
    with tempfile.TemporaryDirectory() as d:
        text = open(os.path.join(COMPOSE_DIR, "compose.yaml")).read()
        text, replaced = re.subn(r"\$\{INGEST_UPLOAD_AUTH:\?[^}]*\}", "${INGEST_UPLOAD_AUTH:-none}", text)
        with open(os.path.join(d, "compose.yaml"), "w") as f:
            f.write(text)
        _, defaulted = compose_config((os.path.join(d, "compose.yaml"),), without)
    checks.check("self-test: the upload check refuses INGEST_UPLOAD_AUTH defaulting to none",
                 replaced == 1 and bool(upload_auth_problems(defaulted, given, compose)))
    def with_ingest(config, **env):
        ingest = config["services"]["ingest"]
        return dict(config, services=dict(config["services"], ingest=dict(ingest, environment=dict(ingest.get("environment") or {}, **env))))
    checks.check("self-test: the upload check refuses INGEST_UPLOAD_AUTH fixed to none in compose.yaml",
                 bool(upload_auth_problems(unset_error, with_ingest(given, INGEST_UPLOAD_AUTH="none"), compose)))
    checks.check("self-test: the upload check refuses a demo with open uploads for a Production app",
                 bool(upload_auth_problems(unset_error, given, with_ingest(compose, APPSTORE_APPS="com.example.demo:123:Sandbox+Production"))))


def mount_source(svc, target):
    """The host path mounted at `target` (a bind mount), or None."""
    return next((src for src, t in mounts(svc) if t == target and os.path.isabs(src)), None)


def check_monitoring(compose):
    """Prometheus scrapes every stage service by DNS on its HTTP_PORT with job = the stage (the
    alert rules match on it) and loads alerts.yaml; Grafana gets that Prometheus as its datasource
    and the dashboard where its provider reads."""
    services = compose["services"]
    prom, graf = services.get("prometheus"), services.get("grafana")
    if not checks.check("monitoring: prometheus and grafana services exist (profile monitoring)", bool(prom and graf)):
        return
    config_path = mount_source(prom, "/etc/prometheus/prometheus.yml")
    if not checks.check("prometheus: its configuration is a mounted file of the repository", bool(config_path and os.path.isfile(config_path))):
        return
    config = yaml.safe_load(open(config_path))
    jobs = {j["job_name"]: j for j in config.get("scrape_configs", [])}
    for stage in ("ingest", "verify", "enrich", "grant"):
        port = str((services[stage].get("environment") or {}).get("HTTP_PORT"))
        sd = (jobs.get(stage, {}).get("dns_sd_configs") or [{}])[0]
        checks.check(f"prometheus: job {stage} finds every {stage} container by DNS (type A) on its HTTP_PORT {port}",
                     sd.get("names") == [stage] and sd.get("type") == "A" and str(sd.get("port")) == port, str(sd))
    rules = [mount_source(prom, r) for r in config.get("rule_files", [])]
    alerts = os.path.join(REPO, "deploy", "monitoring", "alerts.yaml")
    checks.check("prometheus: loads deploy/monitoring/alerts.yaml as its rule file", rules == [alerts], str(rules))
    provisioning = mount_source(graf, "/etc/grafana/provisioning")
    ds = yaml.safe_load(open(os.path.join(provisioning, "datasources", "prometheus.yaml"))) if provisioning else {}
    url = ((ds or {}).get("datasources") or [{}])[0].get("url", "")
    checks.check("grafana: its datasource is the prometheus service", url == "http://prometheus:9090", url)
    providers = yaml.safe_load(open(os.path.join(provisioning, "dashboards", "appstore-entitlements.yaml")))["providers"] if provisioning else []
    folder = providers[0]["options"]["path"] if providers else ""
    dash = mount_source(graf, f"{folder}/appstore-entitlements.json")
    checks.check("grafana: the dashboard is mounted where its provider reads", bool(dash and os.path.isfile(dash)), f"{folder}: {dash}")


def collector_config_path(svc):
    """The repository file the collector reads: mounted where its --config names."""
    config = next((a.split("=", 1)[1] for a in svc.get("command") or [] if a.startswith("--config=")), None)
    return mount_source(svc, config) if config else None


def collector_placement_problems(compose):
    """What is wrong with where the tracing profile's collector stands: only in the profile tracing
    (so the default stack never pulls its image), nothing waiting for it (without the profile that
    service would not start), the official contrib image pinned to a version."""
    services = compose["services"]
    svc = services.get(TRACING)
    if not svc:
        return [f"no {TRACING} service"]
    problems = []
    if svc.get("profiles") != ["tracing"]:
        problems.append(f"{TRACING} has profiles {svc.get('profiles')}, not [tracing]: the default stack would pull its image")
    problems += [f"{n} is in the profile tracing too" for n, s in services.items() if n != TRACING and "tracing" in (s.get("profiles") or [])]
    problems += [f"{n} depends on {TRACING}: without the profile it would not start" for n, s in services.items()
                 if n != TRACING and TRACING in (s.get("depends_on") or {})]
    image = str(svc.get("image", ""))
    if not re.fullmatch(re.escape(COLLECTOR_IMAGE) + r":\d+\.\d+\.\d+", image):
        problems.append(f"image {image!r} is not {COLLECTOR_IMAGE} pinned to a version")
    return problems


def collector_config_problems(compose):
    """What is wrong with the collector's configuration (the repository's file its --config names):
    it must receive OTLP on HTTP 4318 and gRPC 4317, batch, and export traces only to exporters it
    configures, every ${env:…} it reads set by the service (the collector refuses an otlphttp
    exporter without an endpoint even when no pipeline uses it)."""
    svc = compose["services"].get(TRACING)
    if not svc:
        return [f"no {TRACING} service"]
    problems = []
    path = collector_config_path(svc)
    if not (path and os.path.isfile(path)):
        return [f"the configuration its --config names is not a mounted file of the repository ({path})"]
    env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
    text = open(path).read()
    unset = sorted(set(re.findall(r"\$\{env:(\w+)\}", text)) - set(env))
    if unset:
        problems.append(f"{os.path.basename(path)} reads {', '.join(unset)}, which the service does not set")
    # The configuration as the collector sees it: each ${env:X} is X's value parsed as YAML.
    def resolve(node):
        if isinstance(node, dict):
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        m = re.fullmatch(r"\$\{env:(\w+)\}", str(node)) if isinstance(node, str) else None
        return yaml.safe_load(env.get(m.group(1), "")) if m else node
    config = resolve(yaml.safe_load(text) or {})
    protocols = ((config.get("receivers") or {}).get("otlp") or {}).get("protocols") or {}
    for proto, port in (("http", "4318"), ("grpc", "4317")):
        endpoint = str((protocols.get(proto) or {}).get("endpoint", ""))
        if endpoint != f"0.0.0.0:{port}":
            problems.append(f"the OTLP receiver's {proto} endpoint is {endpoint!r}, not 0.0.0.0:{port} (the default listens on localhost only)")
    traces = (((config.get("service") or {}).get("pipelines") or {}).get("traces")) or {}
    exporters = config.get("exporters") or {}
    if traces.get("receivers") != ["otlp"] or "batch" not in (traces.get("processors") or []) or "batch" not in (config.get("processors") or {}):
        problems.append(f"the traces pipeline does not take OTLP through the batch processor: {traces}")
    used = traces.get("exporters")
    if not isinstance(used, list) or not used or any(e not in exporters for e in used):
        problems.append(f"the traces pipeline exports to {used!r}, not a list of its configured exporters {sorted(exporters)}")
    for name, cfg in exporters.items():
        if name.split("/")[0] in ("otlphttp", "otlp") and not (cfg or {}).get("endpoint"):
            problems.append(f"exporter {name} has no endpoint by default: the collector would refuse its configuration")
    return problems


def stage_tracing_problems(defaults, given):
    """Each stage takes OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_TRACES_SAMPLER from the operator's
    environment: rendered with PROBE's values (`given`) every stage has them; rendered without
    (each configuration of `defaults`, by name) every stage has the endpoint blank, tracing off."""
    problems = []
    for stage in STAGES:
        env = given["services"][stage].get("environment") or {}
        for var in TRACING_VARIABLES:
            if env.get(var) != PROBE[var]:
                problems.append(f"{stage}: {var} is {env.get(var)!r} when the operator's environment sets {PROBE[var]!r}: "
                                "not passed through")
        for label, config in defaults.items():
            env = config["services"][stage].get("environment") or {}
            if "OTEL_EXPORTER_OTLP_ENDPOINT" not in env:
                problems.append(f"{label}: {stage} has no OTEL_EXPORTER_OTLP_ENDPOINT")
            elif env["OTEL_EXPORTER_OTLP_ENDPOINT"] != "":
                problems.append(f"{label}: {stage} has tracing on by default (OTEL_EXPORTER_OTLP_ENDPOINT {env['OTEL_EXPORTER_OTLP_ENDPOINT']!r})")
    return problems


def check_tracing(compose, production, given):
    problems = collector_placement_problems(production)
    checks.check(f"tracing: {TRACING} only in the profile tracing (nothing else waits for it), {COLLECTOR_IMAGE} pinned to a version",
                 not problems, "; ".join(problems))
    problems = collector_config_problems(production)
    checks.check(f"tracing: {TRACING} reads otel-collector.yaml: OTLP on HTTP 4318 and gRPC 4317, batched, to exporters it configures "
                 "(default [debug]), every ${env:…} set by the service", not problems, "; ".join(problems))
    defaults = {"compose.yaml": production, "the demo": compose}
    problems = stage_tracing_problems(defaults, given)
    checks.check(f"tracing: {', '.join(STAGES)} pass {' and '.join(TRACING_VARIABLES)} through from the operator's environment, "
                 "tracing off by default", not problems, "; ".join(problems))
    port = str(((((yaml.safe_load(open(collector_config_path(production["services"][TRACING]))) or {}).get("receivers") or {})
                 .get("otlp") or {}).get("protocols") or {}).get("http", {}).get("endpoint", "")).rpartition(":")[2]
    readme = open(os.path.join(REPO, "deploy", "README.md")).read()
    wanted = f"OTEL_EXPORTER_OTLP_ENDPOINT=http://{TRACING}:{port}"
    checks.check(f"tracing: deploy/README.md turns it on with {wanted} and --profile tracing (the collector's service and OTLP/HTTP port)",
                 wanted in readme and "--profile tracing" in readme and "## Following one notification" in readme)
    # Self-tests: each mistake put back is caught.
    def with_service(name, **changes):
        svc = dict(production["services"][name], **changes)
        return dict(production, services=dict(production["services"], **{name: svc}))
    checks.check("self-test: the tracing check refuses the collector outside a profile (the default stack would pull it)",
                 bool(collector_placement_problems(with_service(TRACING, profiles=None))))
    checks.check("self-test: the tracing check refuses a stage that waits for the collector",
                 bool(collector_placement_problems(with_service("grant", depends_on=dict(production["services"]["grant"]["depends_on"],
                                                                               **{TRACING: {"condition": "service_started"}})))))
    checks.check("self-test: the tracing check refuses a moving collector tag",
                 bool(collector_placement_problems(with_service(TRACING, image=f"{COLLECTOR_IMAGE}:latest"))))
    env = production["services"][TRACING]["environment"]
    checks.check("self-test: the tracing check refuses a default pipeline naming an exporter it does not configure",
                 bool(collector_config_problems(with_service(TRACING, environment=dict(env, TRACES_EXPORTERS="[jaeger]")))))
    checks.check("self-test: the tracing check refuses an otlphttp exporter without a default endpoint",
                 bool(collector_config_problems(with_service(TRACING, environment=dict(env, TRACES_BACKEND_ENDPOINT="")))))
    def with_ingest_env(config, env):
        return dict(config, services=dict(config["services"], ingest=dict(config["services"]["ingest"], environment=env)))
    ingest_env, given_env = production["services"]["ingest"]["environment"], given["services"]["ingest"]["environment"]
    no_endpoint = {k: v for k, v in ingest_env.items() if k != "OTEL_EXPORTER_OTLP_ENDPOINT"}
    checks.check("self-test: the tracing check refuses a stage without OTEL_EXPORTER_OTLP_ENDPOINT",
                 bool(stage_tracing_problems({"compose.yaml": with_ingest_env(production, no_endpoint)},
                                             with_ingest_env(given, {k: v for k, v in given_env.items() if k != "OTEL_EXPORTER_OTLP_ENDPOINT"}))))
    checks.check("self-test: the tracing check refuses tracing on by default",
                 bool(stage_tracing_problems({"compose.yaml": with_ingest_env(production, dict(
                     ingest_env, OTEL_EXPORTER_OTLP_ENDPOINT="http://otel-collector:4318"))}, given)))
    checks.check("self-test: the tracing check refuses a stage whose endpoint is fixed instead of taken from the operator's environment",
                 bool(stage_tracing_problems(defaults, with_ingest_env(given, dict(given_env, OTEL_EXPORTER_OTLP_ENDPOINT="")))))


def upstream_without_stand_in(config):
    """Services (outside optional profiles) of a rendered configuration that would pull an upstream
    image: on this machine, with no registry, each must run an image deploy/containers/images builds."""
    return sorted(name for name, svc in config["services"].items()
                  if "build" not in svc and not svc.get("profiles") and not str(svc.get("image", "")).startswith("appstore-entitlements/"))


def check_local_stand_ins(local, compose):
    missing = upstream_without_stand_in(local)
    checks.check("compose.local.yaml gives every upstream image a local stand-in (no registry here)", not missing,
                 f"would pull: {', '.join(missing)}")
    services = dict(local["services"], postgres=dict(local["services"]["postgres"], image=compose["services"]["postgres"]["image"]))
    checks.check("self-test: a service left on its upstream image is caught",
                 "postgres" in upstream_without_stand_in(dict(local, services=services)))


# ---- deploy/stack.env -----------------------------------------------------------------------------

# The stages' local broker tuning compose.local.yaml gives, and deploy/stack.env's keys for it.
LOCAL_TUNING = {"KAFKA_SESSION_TIMEOUT_MS": "LOCAL_KAFKA_SESSION_TIMEOUT_MS",
                "KAFKA_HEARTBEAT_INTERVAL_MS": "LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS",
                "KAFKA_FETCH_WAIT_MAX_MS": "LOCAL_KAFKA_FETCH_WAIT_MAX_MS"}


def differs(where, what, value, key, stack):
    return f"{where}: {what} is {value!r}, deploy/stack.env's {key} is {stack.get(key)!r}"


def stack_problems(compose, local, stack):
    """Where compose's files say what deploy/stack.env says, they must say the same: the stages'
    local broker tuning (compose.local.yaml), the database's name, grant's leeway in the demo (a
    twentieth of the simulated month), and the ports deploy/containers/run publishes."""
    problems = []
    tuned = [name for name, svc in (yaml.safe_load(open(os.path.join(COMPOSE_DIR, "compose.local.yaml")))["services"]).items()
             if "environment" in svc]
    for stage in STAGES:
        if stage not in tuned:
            problems.append(f"deploy/compose/compose.local.yaml: {stage} does not get the local broker tuning")
    for name in tuned:
        env = local["services"][name].get("environment") or {}
        for var, key in LOCAL_TUNING.items():
            if str(env.get(var)) != stack.get(key):
                problems.append(differs(f"deploy/compose/compose.local.yaml: {name}", var, env.get(var), key, stack))
    # The database's name: (file, service, what, value) wherever compose's files write it.
    named = [("compose.yaml", "postgres", "POSTGRES_DB", (compose["services"]["postgres"].get("environment") or {}).get("POSTGRES_DB"))]
    named += [("postgres.env", n, "POSTGRES_DATABASE", (svc.get("environment") or {})["POSTGRES_DATABASE"])
              for n, svc in compose["services"].items() if "POSTGRES_DATABASE" in (svc.get("environment") or {})]
    def dbnames(words):
        return re.findall(r"(?:^|\s)-d\s+(\S+)", " ".join(str(w) for w in words or []))
    for file, config in (("compose.yaml", compose), ("compose.local.yaml", local)):
        named += [(file, "postgres", "the health check's -d", d)
                  for d in dbnames((config["services"]["postgres"].get("healthcheck") or {}).get("test"))]
    named += [("compose.yaml", "db-roles", "psql -d", d) for d in dbnames(compose["services"]["db-roles"].get("entrypoint"))]
    for file, name, what, value in named:
        if str(value) != stack.get("POSTGRES_DATABASE"):
            problems.append(differs(f"deploy/compose/{file}: {name}", what, value, "POSTGRES_DATABASE", stack))
    leeway = (compose["services"]["grant"].get("environment") or {}).get("GRANT_EXPIRY_LEEWAY_S")
    month = stack.get("RUN_MONTH_SECONDS", "")
    if not month.isdigit() or str(leeway) != str(int(month) // 20):
        problems.append(f"deploy/compose/compose.demo.yaml: grant's default GRANT_EXPIRY_LEEWAY_S is {leeway!r}, not a twentieth of "
                        f"deploy/stack.env's RUN_MONTH_SECONDS {month!r}")
    for name, key, port in (("gateway", "CONTAINERS_GATEWAY_PORT", 8443), ("appstore-sim", "CONTAINERS_SIM_PORT", 8090)):
        published = [str(p) for p in local["services"][name].get("ports") or []]
        if f"127.0.0.1:{stack.get(key)}:{port}/tcp" not in published:
            problems.append(f"deploy/containers/run's compose publishes {name} as {published}, not on deploy/stack.env's "
                            f"{key} 127.0.0.1:{stack.get(key)}")
    return problems


def check_stack(compose, local):
    stack = stack_env()
    problems = stack_problems(compose, local, stack)
    checks.check("compose says what deploy/stack.env says: the stages' local broker tuning (compose.local.yaml), the database's "
                 "name, the demo's leeway (a twentieth of RUN_MONTH_SECONDS), the ports deploy/containers/run publishes",
                 not problems, "; ".join(problems))
    for key, value in (("LOCAL_KAFKA_FETCH_WAIT_MAX_MS", "25"), ("POSTGRES_DATABASE", "appstore"), ("RUN_MONTH_SECONDS", "300"),
                       ("CONTAINERS_GATEWAY_PORT", "28443")):
        checks.check(f"self-test: the deploy/stack.env check catches compose disagreeing with {key}",
                     bool(stack_problems(compose, local, dict(stack, **{key: value}))))


def main():
    if not os.access(COMPOSE, os.X_OK):
        checks.check(f"docker-compose is installed ({COMPOSE})", False,
                     "these checks read compose's own rendering (docker-compose config): run deploy/local/setup, "
                     "which installs Debian's docker-compose")
        checks.finish()
    products = executable_products()
    args, stages = parse_dockerfile(DOCKERFILE)
    print(f"Package.swift executable products: {', '.join(sorted(products))}")
    check_dockerfile(args, stages, products)
    production = rendered("compose.yaml alone, given the variables a deployment must set", PRODUCTION_FILES, REQUIRED)
    given = rendered("compose.yaml alone with the operator's tracing and upload settings in the environment",
                     PRODUCTION_FILES, dict(REQUIRED, **PROBE))
    compose = rendered("compose.yaml with compose.demo.yaml and demo.env (the demo)", DEMO_FILES, env_file=DEMO_ENV)
    local = rendered("compose.yaml, compose.demo.yaml and compose.local.yaml with demo.env, as deploy/containers/run runs it",
                     LOCAL_FILES, containers_run_env(), DEMO_ENV)
    if None in (production, given, compose, local):
        checks.finish()
    check_env_files()
    missing_vars = check_services(compose, stages, products, source_strings())
    check_topics(compose)
    check_local_stand_ins(local, compose)
    check_gateway(compose, production)
    check_demo(compose, production)
    check_uploads(given, compose)
    check_monitoring(compose)
    check_tracing(compose, production, given)
    check_stack(compose, local)
    missing = [p for p in args.get("PRODUCTS", "").split() if p not in products]
    if missing:
        print(f"missing executable products (Package.swift): {', '.join(missing)}")
    if missing_vars:
        print(f"variables no source reads yet: {', '.join(sorted(missing_vars))}")
    checks.finish()


if __name__ == "__main__":
    main()
