#!/usr/bin/env python3
"""Checks over the obsidian-tc chart's rendered manifests (`helm template` output), for
scripts/chart-test. Prints one line per check ("ok" or "FAIL", then what failed) and exits 1 when
any check failed.

  check_manifests.py kube-validate RENDERED LABEL EXE VERSION
      every object validated by kubernetes-validate (strict) against Kubernetes VERSION; the
      custom resources it has no schema for (ServiceMonitor, PrometheusRule) are skipped by
      kind, said so, and checked structurally by `policy`
  check_manifests.py policy RENDERED LABEL VALUES...
      the chart's own rules (security, probes, secrets, selectors, shutdown, configuration);
      VALUES are the values files the render used, after the chart's values.yaml, in order
  check_manifests.py self-test RENDERED VALUES...
      breaks a good render in known ways and expects `policy` to catch each one
  check_manifests.py alerts RULES RUNBOOK
      every alert has a severity, a summary and a runbook_url whose anchor is a heading of
      RUNBOOK, and uses only the binary's metric names

Needs PyYAML and Python 3.11+ (tomllib).
"""

import configparser
import copy
import os
import re
import subprocess
import sys
import tempfile
import tomllib

import yaml

CHART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "obsidian-tc")
BINARY = "/usr/local/bin/obsidian-tc"
CONFIG_PATH = "/etc/obsidian-tc/obsidian-tc.toml"
ROLES = {"gateway": "serve", "worker": "worker", "migrate": "migrate"}
# The optional PgBouncer (values: pgbouncer): its own image, command, probes and configuration.
PGBOUNCER = "pgbouncer"
# Custom resources: kubernetes-validate carries only the built-in kinds' schemas.
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}
SECRET_NAME = re.compile(r"(_KEY$|SECRET|PASSWORD|TOKEN|^OTC__(DATABASE|REDIS)__URL$)")
SECRET_CONFIG_KEYS = [("database", "url"), ("redis", "url"), ("object_store", "secret_access_key"),
                      ("oauth", "secret_key"), ("embeddings", "api_key"), ("signup", "access_code")]
# The metric names the binary exports (the alerts may use nothing else).
METRICS = {
    "otc_tool_calls_total", "otc_tool_call_duration_seconds", "otc_tool_calls_in_flight",
    "otc_auth_decisions_total", "otc_rate_limit_decisions_total", "otc_db_pool_connections",
    "otc_db_pool_max_connections", "otc_outbox_depth", "otc_outbox_dead_letters",
    "otc_index_lag_seconds", "otc_embedding_lag_seconds", "otc_worker_leader", "otc_build_info",
    "otc_http_requests_total", "otc_cache_entries", "otc_tenant_calls_today", "otc_tenant_uploads_today",
    "otc_tenant_embedding_texts_today", "otc_tenant_embedding_tokens_today", "otc_tenant_model_tokens_today",
    "otc_tenant_model_cost_usd_today", "otc_tenant_storage_bytes",
}
DEFAULT_SHUTDOWN_GRACE = 30  # the binary's server.shutdown_grace_secs when the file has none


class Checks:
    def __init__(self, quiet=False):
        self.failed = []
        self.quiet = quiet

    def report(self, name, problems, detail=""):
        problems = list(dict.fromkeys(problems))
        if problems:
            self.failed.append(name)
        if self.quiet:
            return
        if problems:
            print(f"FAIL {name}")
            for p in problems:
                print(f"       {p}")
        else:
            print(f"ok   {name}{': ' + detail if detail else ''}")


def load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def kn(obj):
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def pod_template(obj):
    if obj["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
        return obj["spec"]["template"]
    return None


def containers(obj):
    t = pod_template(obj)
    if not t:
        return []
    spec = t["spec"]
    return spec.get("initContainers", []) + spec.get("containers", [])


def component(obj):
    return obj.get("metadata", {}).get("labels", {}).get("app.kubernetes.io/component")


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def port_of(listen):
    m = re.search(r":([0-9]+)$", str(listen))
    return int(m.group(1)) if m else None


def merge(base, over):
    """Helm's values merge: maps merge deeply, null removes a key, anything else replaces."""
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def values_for(values_files):
    with open(os.path.join(CHART, "values.yaml")) as f:
        values = yaml.safe_load(f)
    for path in values_files:
        with open(path) as f:
            values = merge(values, yaml.safe_load(f) or {})
    return values


def without_nulls(v):
    if isinstance(v, dict):
        return {k: without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [without_nulls(x) for x in v]
    return v


def kube_validate(rendered, label, exe, version):
    checks = Checks()
    docs = load_docs(rendered)
    skipped = [kn(d) for d in docs if d["kind"] in CRD_KINDS]
    plain = [d for d in docs if d["kind"] not in CRD_KINDS]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(plain, f)
        path = f.name
    try:
        run = subprocess.run([exe, "--strict", "-k", version, path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    passed = [line for line in lines if line.startswith("INFO ") and " passed for resource " in line]
    problems = [line.replace(path, "<render>") for line in lines if not line.startswith("INFO ")]
    if run.returncode != 0 and not problems:
        problems.append(f"kubernetes-validate exited {run.returncode}")
    if len(passed) != len(plain):
        problems.append(f"{len(passed)} of {len(plain)} objects reported as passed")
    checks.report(f"kube-validate {label}", problems,
                  f"{len(passed)} objects valid against Kubernetes {version} (strict)")
    if skipped:
        print(f"skip kube-validate {label}: custom resources not in the Kubernetes schemas, "
              f"checked by the policy checker instead: {', '.join(skipped)}")
    return checks


def policy(docs, values, label, quiet=False):
    checks = Checks(quiet)
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    workloads = by_kind.get("Deployment", []) + by_kind.get("Job", [])
    # The obsidian-tc binary's own pods and ConfigMaps (PgBouncer's are checked on their own).
    own = [w for w in workloads if component(w) != PGBOUNCER]
    own_deployments = {n: d for n, d in deployments.items() if component(d) != PGBOUNCER}
    configmaps = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", []) if component(d) != PGBOUNCER}
    services = {d["metadata"]["name"]: d for d in by_kind.get("Service", [])}

    def name(check):
        return f"policy {label}: {check}"

    # The parsed configuration of every ConfigMap the pods read.
    configs, problems = {}, []
    for cm in configmaps.values():
        text = (cm.get("data") or {}).get("obsidian-tc.toml")
        if text is None:
            problems.append(f"{kn(cm)} has no obsidian-tc.toml key")
            continue
        try:
            configs[cm["metadata"]["name"]] = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            problems.append(f"{kn(cm)}: obsidian-tc.toml is not TOML: {e}")
    for cm_name, cfg in configs.items():
        server = cfg.get("server", {})
        for key in ("listen", "admin_listen"):
            if port_of(server.get(key)) is None:
                problems.append(f"ConfigMap/{cm_name}: server.{key} is not host:port ({server.get(key)!r})")
        for section, key in SECRET_CONFIG_KEYS:
            if key in cfg.get(section, {}):
                problems.append(f"ConfigMap/{cm_name}: {section}.{key} is a secret and is in the file")
        expected = without_nulls(values.get("config", {}))
        if cfg != expected:
            problems.append(f"ConfigMap/{cm_name}: the TOML does not read back as .Values.config: "
                            f"{cfg!r} != {expected!r}")
    if not configs:
        problems.append("no ConfigMap with obsidian-tc.toml")
    if len({repr(c) for c in configs.values()}) > 1:
        problems.append("the ConfigMaps' obsidian-tc.toml differ")
    checks.report(name("config: obsidian-tc.toml parses as TOML, has server.admin_listen, equals .Values.config, no secrets"),
                  problems, f"{len(configs)} ConfigMap(s)")

    # Images.
    problems = []
    for w in workloads:
        for c in containers(w):
            image = c.get("image", "")
            last = image.rsplit("/", 1)[-1]
            tag = last.split(":", 1)[1] if ":" in last else ""
            tag = tag.split("@", 1)[0]
            if not tag:
                problems.append(f"{kn(w)} {c['name']}: image {image!r} has no tag")
            elif tag == "latest":
                problems.append(f"{kn(w)} {c['name']}: image {image!r} is tagged latest")
    checks.report(name("images: tagged, never latest"), problems)

    # Resources.
    problems = []
    for w in workloads:
        for c in containers(w):
            res = c.get("resources") or {}
            if not res.get("requests"):
                problems.append(f"{kn(w)} {c['name']}: no resources.requests")
            if not (res.get("limits") or {}).get("memory"):
                problems.append(f"{kn(w)} {c['name']}: no resources.limits.memory")
            # The caches take their shares of the container's own limit (obsidian-tc reads the
            # cgroup too; the env makes the two agree wherever the cgroup is not visible).
            cache_env = [e for e in c.get("env") or [] if e.get("name") == "OTC__CACHES__MEMORY_LIMIT_BYTES"]
            field = ((cache_env[0].get("valueFrom") or {}).get("resourceFieldRef") or {}) if cache_env else {}
            if c["name"] in ("gateway", "worker") and field.get("resource") != "limits.memory":
                problems.append(f"{kn(w)} {c['name']}: OTC__CACHES__MEMORY_LIMIT_BYTES is not its limits.memory")
    checks.report(name("resources: requests and limits.memory on every container"), problems)

    # Security.
    problems = []
    for w in workloads:
        spec = pod_template(w)["spec"]
        psc = spec.get("securityContext") or {}
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{kn(w)}: automountServiceAccountToken is not false")
        for c in containers(w):
            csc = c.get("securityContext") or {}
            eff = {**psc, **csc}
            where = f"{kn(w)} {c['name']}"
            if eff.get("runAsNonRoot") is not True:
                problems.append(f"{where}: runAsNonRoot is not true")
            if not isinstance(eff.get("runAsUser"), int) or eff.get("runAsUser") == 0:
                problems.append(f"{where}: runAsUser is not a non-zero uid")
            if csc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: readOnlyRootFilesystem is not true")
            if csc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation is not false")
            if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
                problems.append(f"{where}: capabilities do not drop ALL")
            if (eff.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
                problems.append(f"{where}: seccompProfile is not RuntimeDefault")
            if not any(m.get("mountPath") == "/tmp" for m in c.get("volumeMounts", [])):
                problems.append(f"{where}: nothing writable at /tmp")
    for sa in by_kind.get("ServiceAccount", []):
        if sa.get("automountServiceAccountToken") is not False:
            problems.append(f"{kn(sa)}: automountServiceAccountToken is not false")
    checks.report(name("security: non-root uid, read-only root, no escalation, no capabilities, RuntimeDefault seccomp, no token"), problems)

    # Command, role and configuration of every container.
    problems = []
    for w in own:
        spec = pod_template(w)["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        role = ROLES.get(component(w))
        for c in containers(w):
            where = f"{kn(w)} {c['name']}"
            if c.get("command") != [BINARY]:
                problems.append(f"{where}: command is {c.get('command')!r}, not [{BINARY!r}]")
            if not role or (c.get("args") or [None])[0] != role:
                problems.append(f"{where}: args {c.get('args')!r} do not start with the role {role!r}")
            env = {e["name"]: e for e in c.get("env", [])}
            if (env.get("OTC_CONFIG") or {}).get("value") != CONFIG_PATH:
                problems.append(f"{where}: OTC_CONFIG is not {CONFIG_PATH}")
            mount = next((m for m in c.get("volumeMounts", []) if m.get("mountPath") == os.path.dirname(CONFIG_PATH)), None)
            cm = ((volumes.get(mount["name"]) or {}).get("configMap") or {}).get("name") if mount else None
            if cm not in configs:
                problems.append(f"{where}: {os.path.dirname(CONFIG_PATH)} is not a rendered ConfigMap with obsidian-tc.toml")
    checks.report(name(f"containers: command {BINARY}, args [role], OTC_CONFIG from the ConfigMap"), problems)

    # Secrets.
    problems = []
    for w in workloads:
        for c in containers(w):
            where = f"{kn(w)} {c['name']}"
            names = set()
            for e in c.get("env", []):
                names.add(e["name"])
                if SECRET_NAME.search(e["name"]):
                    if "value" in e:
                        problems.append(f"{where}: {e['name']} has a literal value")
                    elif not ((e.get("valueFrom") or {}).get("secretKeyRef")):
                        problems.append(f"{where}: {e['name']} is not from a secretKeyRef")
            from_secret = [f for f in c.get("envFrom", []) if f.get("secretRef")]
            for f in c.get("envFrom", []):
                if not f.get("secretRef") and not f.get("configMapRef"):
                    problems.append(f"{where}: envFrom entry {f!r}")
            for var in ("OTC__DATABASE__URL", "OTC__REDIS__URL"):
                if component(w) != PGBOUNCER and var not in names and not from_secret:
                    problems.append(f"{where}: {var} comes from no Secret")
    checks.report(name("secrets: only through secretKeyRef or envFrom secretRef, never literal"), problems)

    # Probes (Deployments).
    problems = []
    for d in deployments.values():
        for c in containers(d):
            ports = {p.get("name") for p in c.get("ports", [])}
            if component(d) == PGBOUNCER:
                for probe in ("readinessProbe", "livenessProbe"):
                    port = ((c.get(probe) or {}).get("tcpSocket") or {}).get("port")
                    if port not in ports:
                        problems.append(f"{kn(d)} {c['name']}: {probe} is not a tcpSocket on a container port")
                continue
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                p = c.get(probe)
                if p is None:
                    if probe != "startupProbe":
                        problems.append(f"{kn(d)} {c['name']}: no {probe}")
                    continue
                port = (p.get("httpGet") or {}).get("port")
                if isinstance(port, str) and port not in ports:
                    problems.append(f"{kn(d)} {c['name']}: {probe} uses port {port!r}, not a container port")
            paths = {(c.get(p) or {}).get("httpGet", {}).get("path") for p in ("readinessProbe", "livenessProbe")}
            if paths != {"/readyz", "/healthz"}:
                problems.append(f"{kn(d)} {c['name']}: probes are not /readyz (readiness) and /healthz (liveness)")
            if component(d) == "worker" and (c.get("readinessProbe") or {}).get("httpGet", {}).get("port") != "admin":
                problems.append(f"{kn(d)} {c['name']}: the worker's probes are not on the admin port")
    checks.report(name("probes: readiness and liveness on every Deployment container, on its ports"), problems)

    # Ports match the configuration.
    problems = []
    cfg = next(iter(configs.values()), {})
    listen, admin = port_of(cfg.get("server", {}).get("listen")), port_of(cfg.get("server", {}).get("admin_listen"))
    for d in own_deployments.values():
        for c in containers(d):
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
            if ports.get("admin") != admin:
                problems.append(f"{kn(d)} {c['name']}: admin port {ports.get('admin')} is not server.admin_listen's {admin}")
            if component(d) == "gateway" and ports.get("http") != listen:
                problems.append(f"{kn(d)} {c['name']}: http port {ports.get('http')} is not server.listen's {listen}")
    checks.report(name("ports: http = server.listen, admin = server.admin_listen"), problems)

    # Selectors.
    problems = []
    for d in deployments.values():
        sel = d["spec"]["selector"].get("matchLabels", {})
        labels = d["spec"]["template"]["metadata"].get("labels", {})
        if not selects(sel, labels):
            problems.append(f"{kn(d)}: selector {sel} does not match its pod labels")
        for t in d["spec"]["template"]["spec"].get("topologySpreadConstraints", []):
            if not selects(t["labelSelector"].get("matchLabels", {}), labels):
                problems.append(f"{kn(d)}: topology spread over {t['topologyKey']} does not select its own pods")
    for pdb in by_kind.get("PodDisruptionBudget", []):
        sel = pdb["spec"]["selector"].get("matchLabels", {})
        hits = [n for n, d in deployments.items() if selects(sel, d["spec"]["template"]["metadata"]["labels"])]
        if len(hits) != 1:
            problems.append(f"{kn(pdb)} selects {len(hits)} Deployments ({hits})")
        if ("minAvailable" in pdb["spec"]) == ("maxUnavailable" in pdb["spec"]):
            problems.append(f"{kn(pdb)}: set exactly one of minAvailable, maxUnavailable")
    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        ref = hpa["spec"]["scaleTargetRef"]
        if ref.get("kind") != "Deployment" or ref.get("name") not in deployments:
            problems.append(f"{kn(hpa)} targets {ref}, not a rendered Deployment")
        elif "replicas" in deployments[ref["name"]]["spec"]:
            problems.append(f"{kn(hpa)}: its Deployment also sets replicas (each upgrade would reset them)")
    checks.report(name("selectors: Deployments, topology spread, PDBs and HPAs select what exists"), problems,
                  f"{len(by_kind.get('PodDisruptionBudget', []))} PDB(s), {len(by_kind.get('HorizontalPodAutoscaler', []))} HPA(s)")

    # Services and Ingress.
    problems = []
    for svc in services.values():
        sel = svc["spec"].get("selector", {})
        hits = [d for d in deployments.values() if selects(sel, d["spec"]["template"]["metadata"]["labels"])]
        if not hits:
            problems.append(f"{kn(svc)} selects no Deployment")
        for port in svc["spec"].get("ports", []):
            target = port.get("targetPort", port.get("port"))
            for d in hits:
                cports = [p for c in containers(d) for p in c.get("ports", [])]
                if isinstance(target, str):
                    ok = any(p.get("name") == target for p in cports)
                else:
                    ok = any(p.get("containerPort") == target for p in cports)
                if not ok:
                    problems.append(f"{kn(svc)} port {port.get('name')}: targetPort {target!r} is no container port of {kn(d)}")
            if port.get("name") == "admin" and not svc["metadata"]["name"].endswith("-metrics"):
                problems.append(f"{kn(svc)} exposes the admin port (metrics) on a public Service")
    for ing in by_kind.get("Ingress", []):
        paths = []
        for rule in ing["spec"].get("rules", []):
            for p in rule.get("http", {}).get("paths", []):
                paths.append(p["path"])
                backend = p["backend"]["service"]
                svc = services.get(backend["name"])
                if not svc:
                    problems.append(f"{kn(ing)} {p['path']}: no Service {backend['name']}")
                    continue
                pname = backend["port"].get("name")
                if pname and pname not in {sp.get("name") for sp in svc["spec"]["ports"]}:
                    problems.append(f"{kn(ing)} {p['path']}: Service {backend['name']} has no port {pname}")
                if pname == "admin":
                    problems.append(f"{kn(ing)} {p['path']}: routes the admin port")
        if "/mcp" not in paths:
            problems.append(f"{kn(ing)}: no /mcp path")
        for p in paths:
            if p.rstrip("/") in ("", "/metrics", "/healthz", "/readyz"):
                problems.append(f"{kn(ing)}: routes {p!r}")
    checks.report(name("services: targetPorts name container ports; the Ingress routes the MCP paths, never admin or /metrics"), problems)

    # Graceful shutdown.
    problems = []
    for d in deployments.values():
        spec = d["spec"]["template"]["spec"]
        if component(d) != "gateway":
            if not spec.get("terminationGracePeriodSeconds"):
                problems.append(f"{kn(d)}: no terminationGracePeriodSeconds")
            continue
        for c in containers(d):
            cmd = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
            if len(cmd) != 2 or cmd[0] != "/bin/sleep" or not str(cmd[1]).isdigit():
                problems.append(f"{kn(d)} {c['name']}: preStop is not [/bin/sleep, N]: {cmd!r}")
                continue
            grace = cfg.get("server", {}).get("shutdown_grace_secs", DEFAULT_SHUTDOWN_GRACE)
            total = spec.get("terminationGracePeriodSeconds", 30)
            # After the drain: audit flush (5 s), admin listener (1 s), trace and metric flushes
            # (2 s each).
            after_drain = 10
            if not total > int(cmd[1]) + grace + after_drain:
                problems.append(f"{kn(d)}: terminationGracePeriodSeconds {total} is not more than preStop {cmd[1]} + shutdown_grace_secs {grace} + {after_drain} s of flushes")
    checks.report(name("shutdown: gateway terminationGracePeriodSeconds > preStop sleep + server.shutdown_grace_secs + flushes"), problems)

    # The migration hook.
    problems = []
    for job in by_kind.get("Job", []):
        ann = job["metadata"].get("annotations", {})
        if set(ann.get("helm.sh/hook", "").split(",")) != {"pre-install", "pre-upgrade"}:
            problems.append(f"{kn(job)}: not a pre-install,pre-upgrade hook")
        if not job["spec"].get("activeDeadlineSeconds"):
            problems.append(f"{kn(job)}: no activeDeadlineSeconds")
        if job["spec"]["template"]["spec"].get("restartPolicy") != "Never":
            problems.append(f"{kn(job)}: restartPolicy is not Never")
        weight = int(ann.get("helm.sh/hook-weight", "0"))
        spec = job["spec"]["template"]["spec"]
        config_mounts = {m["name"] for c in spec.get("containers", []) for m in c.get("volumeMounts", [])
                         if m.get("mountPath") == os.path.dirname(CONFIG_PATH)}
        for v in spec.get("volumes", []):
            if v["name"] not in config_mounts:
                continue
            cm = configmaps.get((v.get("configMap") or {}).get("name"))
            if not cm:
                problems.append(f"{kn(job)}: its configuration is not a rendered ConfigMap")
            else:
                cann = cm["metadata"].get("annotations", {})
                if "pre-install" not in cann.get("helm.sh/hook", "") or int(cann.get("helm.sh/hook-weight", "0")) >= weight:
                    problems.append(f"{kn(job)}: its {kn(cm)} is not a hook made before it (pre-install runs before the release's objects)")
    migrations = values.get("migrations", {}).get("enabled")
    if bool(by_kind.get("Job")) != bool(migrations):
        problems.append(f"migrations.enabled is {migrations} but {len(by_kind.get('Job', []))} Job(s) rendered")
    checks.report(name("migrations: a pre-install/pre-upgrade hook Job with a deadline and its own config copy"), problems,
                  "on" if migrations else "off (no Job)")

    # PgBouncer.
    checks.report(name("pgbouncer: transaction pooling the pods may use, room for every pod's pool, its files mounted"),
                  *pgbouncer_problems(by_kind, values, cfg))

    # Custom resources, structurally (kubernetes-validate has no schema for them).
    problems = []
    for sm in by_kind.get("ServiceMonitor", []):
        if sm.get("apiVersion") != "monitoring.coreos.com/v1":
            problems.append(f"{kn(sm)}: apiVersion {sm.get('apiVersion')}")
        spec = sm.get("spec") or {}
        sel = (spec.get("selector") or {}).get("matchLabels") or {}
        hits = [s for s in services.values() if selects(sel, s["metadata"].get("labels", {}))]
        if not hits:
            problems.append(f"{kn(sm)}: its selector matches no Service")
        endpoints = spec.get("endpoints") or []
        if not endpoints:
            problems.append(f"{kn(sm)}: no endpoints")
        for ep in endpoints:
            if set(ep) - {"port", "path", "interval", "scrapeTimeout", "scheme", "relabelings", "metricRelabelings", "honorLabels"}:
                problems.append(f"{kn(sm)}: endpoint keys {sorted(ep)}")
            for s in hits:
                if ep.get("port") not in {p.get("name") for p in s["spec"]["ports"]}:
                    problems.append(f"{kn(sm)}: endpoint port {ep.get('port')!r} is not a port of {kn(s)}")
        job_label = spec.get("jobLabel")
        jobs = sorted(s["metadata"]["labels"].get(job_label, "") for s in hits)
        if jobs != ["obsidian-tc-gateway", "obsidian-tc-worker"]:
            problems.append(f"{kn(sm)}: scrape jobs {jobs}, not obsidian-tc-gateway and obsidian-tc-worker")
    for pr in by_kind.get("PrometheusRule", []):
        if pr.get("apiVersion") != "monitoring.coreos.com/v1":
            problems.append(f"{kn(pr)}: apiVersion {pr.get('apiVersion')}")
        groups = (pr.get("spec") or {}).get("groups") or []
        if not groups:
            problems.append(f"{kn(pr)}: no groups")
        with open(os.path.join(CHART, "files", "alerts.yml")) as f:
            want = yaml.safe_load(f)["groups"]
        url = values.get("prometheusRule", {}).get("runbookUrl", "")
        for group in groups:
            if not group.get("name") or not group.get("rules"):
                problems.append(f"{kn(pr)}: a group without name or rules")
            for rule in group.get("rules", []):
                if set(rule) - {"alert", "expr", "for", "labels", "annotations"} or not rule.get("alert") or not rule.get("expr"):
                    problems.append(f"{kn(pr)}: rule {rule.get('alert')!r} is malformed")
                if not rule.get("annotations", {}).get("runbook_url", "").startswith(url + "#"):
                    problems.append(f"{kn(pr)}: {rule.get('alert')} runbook_url is not under prometheusRule.runbookUrl")
        names = [r.get("alert") for g in groups for r in g.get("rules", [])]
        if names != [r["alert"] for g in want for r in g["rules"]]:
            problems.append(f"{kn(pr)}: its alerts {names} are not those of files/alerts.yml")
    crds = by_kind.get("ServiceMonitor", []) + by_kind.get("PrometheusRule", [])
    checks.report(name("custom resources: ServiceMonitor and PrometheusRule well-formed"), problems,
                  ", ".join(kn(c) for c in crds) or "none rendered")

    # Labels.
    problems = []
    for d in docs:
        labels = d.get("metadata", {}).get("labels") or {}
        for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance"):
            if key not in labels:
                problems.append(f"{kn(d)}: no {key} label")
    checks.report(name("labels: every object carries app.kubernetes.io/name and instance"), problems, f"{len(docs)} objects")
    return checks


def pgbouncer_problems(by_kind, values, cfg):
    """The problems of the optional PgBouncer, and what was rendered."""
    pg = values.get("pgbouncer") or {}
    rendered = [d for d in by_kind.get("Deployment", []) if component(d) == PGBOUNCER]
    if bool(rendered) != bool(pg.get("enabled")):
        return [f"pgbouncer.enabled is {pg.get('enabled')} but {len(rendered)} PgBouncer Deployment(s) rendered"], ""
    if not rendered:
        return [], "off"
    problems = []
    d = rendered[0]
    spec = d["spec"]["template"]["spec"]
    c = spec["containers"][0]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {m["mountPath"]: volumes.get(m["name"], {}) for m in c.get("volumeMounts", [])}

    def mounted(path):
        """The volume a file path lies in (the longest mount path that holds it)."""
        best = max((m for m in mounts if path.startswith(m.rstrip("/") + "/")), key=len, default=None)
        return mounts.get(best) if best else None

    ini_path = (c.get("args") or [None])[0] or ""
    cm_name = ((mounted(ini_path) or {}).get("configMap") or {}).get("name")
    cm = next((m for m in by_kind.get("ConfigMap", []) if m["metadata"]["name"] == cm_name), None)
    text = ((cm or {}).get("data") or {}).get(os.path.basename(ini_path))
    if text is None:
        return [f"{kn(d)}: its argument {ini_path!r} is no file of a rendered ConfigMap"], ""
    ini = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    try:
        ini.read_string(text)
    except configparser.Error as e:
        return [f"{kn(d)}: pgbouncer.ini does not parse: {e}"], ""
    s = ini["pgbouncer"] if ini.has_section("pgbouncer") else {}
    if s.get("pool_mode") != "transaction":
        problems.append(f"pool_mode is {s.get('pool_mode')!r}, not transaction")
    if "extra_float_digits" not in [x.strip() for x in s.get("ignore_startup_parameters", "").split(",")]:
        problems.append("ignore_startup_parameters lacks extra_float_digits (sqlx sends it)")
    if (cfg.get("database") or {}).get("transaction_pooler") is not True:
        problems.append("config.database.transaction_pooler is not true: the pods would prepare statements across transactions")
    if not (ini.has_section("databases") and ini["databases"]):
        problems.append("pgbouncer.ini names no database")
    for key in ("auth_file",) + (("server_tls_ca_file",) if s.get("server_tls_sslmode") in ("verify-ca", "verify-full") else ()):
        path = s.get(key)
        if not path or not (mounted(path) or {}).get("secret"):
            problems.append(f"{key} {path!r} is not in a mounted Secret")
    port = next((p.get("containerPort") for p in c.get("ports", []) if p.get("name") == PGBOUNCER), None)
    if str(port) != s.get("listen_port"):
        problems.append(f"listen_port {s.get('listen_port')} is not the container port {port}")
    gw, wk = values.get("gateway") or {}, values.get("worker") or {}
    auto = gw.get("autoscaling") or {}
    pods = (auto.get("maxReplicas") if auto.get("enabled") else gw.get("replicas", 0)) + wk.get("replicas", 0)
    need = pods * ((cfg.get("database") or {}).get("max_connections") or 32)
    if int(s.get("max_client_conn", 0)) < need:
        problems.append(f"max_client_conn {s.get('max_client_conn')} is less than the pods' {need} connections")
    cmd = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
    if len(cmd) != 2 or cmd[0] != "/bin/sleep":
        problems.append(f"{kn(d)}: preStop is not [/bin/sleep, N]: {cmd!r}")
    if not any(selects(svc["spec"].get("selector", {}), d["spec"]["template"]["metadata"]["labels"])
               for svc in by_kind.get("Service", [])):
        problems.append(f"{kn(d)}: no Service selects it")
    policies = by_kind.get("NetworkPolicy", [])
    if policies:
        labels = d["spec"]["template"]["metadata"]["labels"]
        if not any("Ingress" in p["spec"].get("policyTypes", []) and selects(p["spec"]["podSelector"].get("matchLabels", {}), labels)
                   for p in policies):
            problems.append("NetworkPolicies are on but none limits who reaches PgBouncer")
        egress = [rule for p in policies if "Egress" in p["spec"].get("policyTypes", []) for rule in p["spec"].get("egress", [])]
        if not any(any(selects((peer.get("podSelector") or {}).get("matchLabels", {}), labels) for peer in rule.get("to", []))
                   and any(str(x.get("port")) == str(port) for x in rule.get("ports", [])) for rule in egress):
            problems.append("NetworkPolicies are on but the pods may not reach PgBouncer's port")
    servers = pg.get("replicas", 1) * (int(s.get("default_pool_size", 20)) + int(s.get("reserve_pool_size", 0)))
    return problems, f"{pg.get('replicas')} replica(s), at most {servers} server connections"


def self_test(rendered, values_files):
    """Each mutation must make the named check fail; the unmutated render must pass."""
    docs = load_docs(rendered)
    values = values_for(values_files)
    checks = Checks()

    def find(kind, comp=None):
        return next(d for d in docs_ if d["kind"] == kind and (comp is None or component(d) == comp))

    def gateway_container():
        return find("Deployment", "gateway")["spec"]["template"]["spec"]["containers"][0]

    mutations = [
        ("images", "image tagged latest", lambda: gateway_container().update(image="ghcr.io/x/obsidian-tc:latest")),
        ("images", "image without tag", lambda: gateway_container().update(image="ghcr.io/x/obsidian-tc")),
        ("secrets", "literal database URL", lambda: gateway_container()["env"].append({"name": "OTC__DATABASE__URL", "value": "postgres://u:p@h/db"})),
        ("secrets", "literal API key", lambda: gateway_container()["env"].append({"name": "OTC__EMBEDDINGS__API_KEY", "value": "sk-1"})),
        ("resources", "no memory limit", lambda: gateway_container()["resources"].pop("limits")),
        ("resources", "caches not sized by the memory limit", lambda: gateway_container().update(env=[e for e in gateway_container()["env"] if e["name"] != "OTC__CACHES__MEMORY_LIMIT_BYTES"])),
        ("security", "root filesystem writable", lambda: gateway_container()["securityContext"].update(readOnlyRootFilesystem=False)),
        ("security", "runs as root", lambda: [gateway_container()["securityContext"].update(runAsUser=0),
                                              find("Deployment", "gateway")["spec"]["template"]["spec"]["securityContext"].update(runAsUser=0)]),
        ("probes", "no readiness probe", lambda: gateway_container().pop("readinessProbe")),
        ("selectors", "selector off its pods", lambda: find("Deployment", "worker")["spec"]["selector"]["matchLabels"].update({"app.kubernetes.io/component": "other"})),
        ("selectors", "PDB selects nothing", lambda: find("PodDisruptionBudget")["spec"]["selector"]["matchLabels"].update({"app.kubernetes.io/component": "other"})),
        ("selectors", "HPA targets nothing", lambda: find("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"].update(name="missing")),
        ("services", "Service targetPort unknown", lambda: find("Service", "gateway")["spec"]["ports"][0].update(targetPort="web")),
        ("shutdown", "grace period too short", lambda: find("Deployment", "gateway")["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=10)),
        ("config", "no admin_listen", lambda: [cm["data"].update({"obsidian-tc.toml": cm["data"]["obsidian-tc.toml"].replace("admin_listen", "admin_listen_x")}) for cm in docs_ if cm["kind"] == "ConfigMap" and component(cm) != PGBOUNCER]),
        ("config", "not TOML", lambda: next(cm for cm in docs_ if cm["kind"] == "ConfigMap" and component(cm) != PGBOUNCER)["data"].update({"obsidian-tc.toml": "[server\nlisten = 1"})),
        ("containers", "role missing", lambda: gateway_container().update(args=[])),
        ("custom resources", "ServiceMonitor on another port", lambda: find("ServiceMonitor")["spec"]["endpoints"][0].update(port="http")),
        ("pgbouncer", "session pooling", lambda: pgbouncer_ini(lambda t: t.replace("pool_mode = transaction", "pool_mode = session"))),
        ("pgbouncer", "max_client_conn below the pods' connections", lambda: pgbouncer_ini(lambda t: re.sub(r"max_client_conn = \d+", "max_client_conn = 10", t))),
        ("pgbouncer", "userlist outside a Secret", lambda: pgbouncer_ini(lambda t: t.replace("auth_file = /etc/pgbouncer-auth/", "auth_file = /etc/pgbouncer/"))),
        ("pgbouncer", "no way to it through the NetworkPolicies", lambda: [p["spec"].update(egress=[r for r in p["spec"]["egress"] if not any("podSelector" in x for x in r.get("to", []))]) for p in docs_ if p["kind"] == "NetworkPolicy" and "Egress" in p["spec"]["policyTypes"]]),
        ("probes", "PgBouncer probed over HTTP", lambda: find("Deployment", PGBOUNCER)["spec"]["template"]["spec"]["containers"][0].update(readinessProbe={"httpGet": {"path": "/", "port": "pgbouncer"}})),
    ]

    def pgbouncer_ini(edit):
        data = find("ConfigMap", PGBOUNCER)["data"]
        data["pgbouncer.ini"] = edit(data["pgbouncer.ini"])
    baseline = policy(docs, values, "baseline", quiet=True)
    checks.report("self-test: the unmutated render passes the policy checks", [f"fails {f}" for f in baseline.failed])
    for check, what, mutate in mutations:
        docs_ = copy.deepcopy(docs)
        mutate()
        result = policy(docs_, values, "mutant", quiet=True)
        caught = [f for f in result.failed if f.startswith(f"policy mutant: {check}")]
        checks.report(f"self-test: policy catches {what} (check {check})", [] if caught else ["not caught"])
    return checks


def github_anchor(heading):
    slug = heading.strip().lower()
    slug = re.sub(r"[^\w\- ]", "", slug)
    return slug.replace(" ", "-")


def alerts(rules_path, runbook_path):
    checks = Checks()
    with open(rules_path) as f:
        rules = yaml.safe_load(f)
    with open(runbook_path) as f:
        anchors = {github_anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", f.read(), re.M)}
    problems, names, used = [], [], set()
    for group in rules.get("groups", []):
        for rule in group.get("rules", []):
            alert = rule.get("alert")
            names.append(alert)
            if not (rule.get("labels") or {}).get("severity") in ("critical", "warning", "info"):
                problems.append(f"{alert}: no severity label")
            ann = rule.get("annotations") or {}
            if not ann.get("summary"):
                problems.append(f"{alert}: no summary")
            url = ann.get("runbook_url", "")
            if "#" not in url or not url.split("#", 1)[0].endswith("docs/runbook.md"):
                problems.append(f"{alert}: runbook_url {url!r} is not docs/runbook.md#anchor")
            elif url.split("#", 1)[1] not in anchors:
                problems.append(f"{alert}: docs/runbook.md has no heading for #{url.split('#', 1)[1]}")
            for metric in re.findall(r"\b(otc_[a-z_]+)", rule.get("expr", "")):
                base = re.sub(r"_(bucket|count|sum)$", "", metric)
                used.add(base)
                if metric not in METRICS and base not in METRICS:
                    problems.append(f"{alert}: {metric} is not a metric the binary exports")
    if len(names) != len(set(names)):
        problems.append("alert names repeat")
    checks.report("alerts: severity, summary, runbook_url anchors in docs/runbook.md, known metric names", problems,
                  f"{len(names)} alerts over {len(used)} metrics")
    return checks


def main(argv):
    if len(argv) >= 6 and argv[1] == "kube-validate":
        checks = kube_validate(argv[2], argv[3], argv[4], argv[5])
    elif len(argv) >= 4 and argv[1] == "policy":
        checks = policy(load_docs(argv[2]), values_for(argv[4:]), argv[3])
    elif len(argv) >= 3 and argv[1] == "self-test":
        checks = self_test(argv[2], argv[3:])
    elif len(argv) == 4 and argv[1] == "alerts":
        checks = alerts(argv[2], argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
