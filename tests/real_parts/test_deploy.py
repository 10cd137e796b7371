"""deploy/: the compose stack, the Kubernetes manifests, and the configs they carry.

No container engine runs here, so nothing is started: each file is checked by the tool that
owns its format (docker-compose, kubernetes-validate, promtool, amtool, rankmon check-config)
and against the other files it must agree with (ports, mounts, selectors, probes).
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from monitor.alerting.conditions import Drop
from monitor.cli import main
from monitor.config.loader import load_config
from monitor.demo.broker import free_port
from tests.support.realparts import AlertmanagerServer, ServerProcess, require_binary

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
OPERATOR = KUBERNETES / "prometheus-operator"  # needs the Prometheus operator's CRDs
METRICS_PORT = 9464


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


def manifests(*folders: Path) -> dict[str, dict[str, Any]]:
    """Kind -> document of the folders' YAML files (by default the plain and operator ones)."""
    found: dict[str, dict[str, Any]] = {}
    paths = [path for folder in folders or (KUBERNETES, OPERATOR) for path in folder.glob("*.yaml")]
    for path in sorted(paths):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            found[document["kind"]] = document
    return found


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Target -> source of a resolved service's volumes (long or short syntax)."""
    found: dict[str, str] = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            found[volume["target"]] = volume["source"]
        else:
            source, target = volume.split(":")[:2]
            found[target] = source
    return found


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """`docker-compose config`: the file as Compose resolves it (paths made absolute)."""
    binary = require_binary("docker-compose")
    done = run(binary, "-f", str(DEPLOY / "docker-compose.yml"), "config")
    assert done.returncode == 0, done.stderr
    resolved: dict[str, Any] = yaml.safe_load(done.stdout)
    return resolved


def test_compose_stack_has_kafka_in_kraft_mode_and_every_part(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"kafka", "rankmon", "prometheus", "alertmanager", "grafana"} <= set(services)
    kafka = services["kafka"]["environment"]
    assert kafka["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft: no ZooKeeper
    assert not any("zookeeper" in name for name in services)


def test_every_file_the_compose_stack_mounts_is_in_the_repository(
    compose: dict[str, Any],
) -> None:
    bind_mounts = 0
    for name, service in compose["services"].items():
        for source in mounts(service).values():
            if source.startswith("/"):  # named volumes stay names
                assert Path(source).exists(), f"{name} mounts {source}, which is missing"
                bind_mounts += 1
    assert bind_mounts >= 5


def test_grafana_is_provisioned_with_the_mounted_dashboards(compose: dict[str, Any]) -> None:
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/rankmon.yml").read_text())
    path = provider["providers"][0]["options"]["path"]
    assert Path(mounts(compose["services"]["grafana"])[path]) == DEPLOY / "grafana" / "dashboards"
    datasources = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text()
    )
    assert [d["type"] for d in datasources["datasources"]] == ["prometheus"]


def test_deployed_dashboards_are_rendered_with_the_deployed_config(tmp_path: Path) -> None:
    config = DEPLOY / "rankmon" / "config.yaml"
    assert main(["dashboards", "render", "--config", str(config), "--out", str(tmp_path)]) == 0
    deployed = DEPLOY / "grafana" / "dashboards"
    assert sorted(p.name for p in deployed.glob("*.json")) == sorted(
        p.name for p in tmp_path.glob("*.json")
    )
    for path in tmp_path.glob("*.json"):
        assert path.read_bytes() == (deployed / path.name).read_bytes(), path.name


def test_kubernetes_manifests_pass_kubernetes_validate_strictly() -> None:
    # Only built-in kinds, so `kubectl apply -f deploy/kubernetes/` works on any cluster; the
    # PodMonitor (a CRD that kubernetes-validate has no schema for) is checked below.
    checked = []
    for kind, document in manifests(KUBERNETES).items():
        kubernetes_validate.validate(document, "1.37.0", strict=True)
        checked.append(kind)
    assert sorted(checked) == [
        "ConfigMap",
        "CronJob",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
    ]


def test_only_the_prometheus_operator_folder_needs_its_custom_resource_definitions() -> None:
    assert [p.name for p in OPERATOR.iterdir()] == ["podmonitor.yaml"]
    plain = {d["apiVersion"].split("/")[0] for d in manifests(KUBERNETES).values()}
    assert not any(group.endswith("monitoring.coreos.com") for group in plain), plain
    [monitor] = manifests(OPERATOR).values()
    assert (monitor["apiVersion"], monitor["kind"]) == ("monitoring.coreos.com/v1", "PodMonitor")


def test_kubernetes_validate_rejects_a_misspelled_field() -> None:
    service = manifests()["Service"]
    service["spec"]["ports"][0]["targetport"] = "metrics"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, "1.37.0", strict=True)


def test_deployment_probes_healthz_and_readyz_on_the_metrics_port_as_non_root() -> None:
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == METRICS_PORT
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    secret = container["env"][0]["valueFrom"]["secretKeyRef"]
    assert secret["name"] == "rankmon-secrets"


def test_service_and_pod_monitor_select_the_deployments_pods_and_port() -> None:
    found = manifests()
    labels = found["Deployment"]["spec"]["template"]["metadata"]["labels"]
    service, monitor = found["Service"]["spec"], found["PodMonitor"]["spec"]
    assert service["selector"].items() <= labels.items()
    assert monitor["selector"]["matchLabels"].items() <= labels.items()
    assert service["ports"][0]["targetPort"] == "metrics"
    assert [e["port"] for e in monitor["podMetricsEndpoints"]] == ["metrics"]
    # The rendered Prometheus rules select job="rankmon" by default.
    assert labels[monitor["jobLabel"]] == "rankmon"


def test_the_replay_cronjob_mounts_the_config_and_topics_the_configs_replay_section_names() -> None:
    found = manifests()
    cron = found["CronJob"]["spec"]
    assert cron["concurrencyPolicy"] == "Forbid"  # never two replays at once
    pod = cron["jobTemplate"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["args"][0] == "replay" and "--once" in container["args"]
    config_path = Path(container["args"][container["args"].index("--config") + 1])
    mounts = {Path(m["mountPath"]): m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v["configMap"]["name"] for v in pod["volumes"]}
    assert volumes[mounts[config_path.parent]] == found["ConfigMap"]["metadata"]["name"]
    replay = yaml.safe_load(found["ConfigMap"]["data"]["config.yaml"])["replay"]
    assert volumes[mounts[Path(replay["topics"]).parent]] == "rankmon-evaluation-set"
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_the_deployment_mounts_the_config_where_its_arguments_point() -> None:
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    config_path = Path(container["args"][container["args"].index("--config") + 1])
    mounts = {Path(m["mountPath"]): m["name"] for m in container["volumeMounts"]}
    volume = {v["name"]: v for v in pod["volumes"]}[mounts[config_path.parent]]
    config_map = manifests()["ConfigMap"]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert config_path.name in config_map["data"]


@pytest.mark.parametrize("where", ["compose", "kubernetes"])
def test_deployed_rankmon_configs_pass_check_config(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if where == "compose":
        path = DEPLOY / "rankmon" / "config.yaml"
    else:
        path = tmp_path / "config.yaml"
        path.write_text(manifests()["ConfigMap"]["data"]["config.yaml"], encoding="utf-8")
        # the evaluation set is mounted in the pod; here, the compose example's stands in
        qrels = str(DEPLOY / "rankmon" / "qrels.txt")
        monkeypatch.setenv("RANKMON_EVALUATION_SET__PATH", qrels)
        monkeypatch.setenv("RANKMON_REPLAY__TOPICS", str(DEPLOY / "rankmon" / "topics.tsv"))
    assert main(["check-config", str(path)]) == 0, capsys.readouterr().err


def test_prometheus_rules_are_rendered_from_the_deployed_config(tmp_path: Path) -> None:
    rendered = tmp_path / "rankmon.yml"
    config = str(DEPLOY / "rankmon" / "config.yaml")
    assert main(["rules", "render", "--config", config, "--output", str(rendered)]) == 0
    deployed = DEPLOY / "prometheus" / "rules" / "rankmon.yml"
    assert rendered.read_bytes() == deployed.read_bytes()


def test_drop_alerts_of_the_stack_come_only_from_rankmons_significance_gated_rule() -> None:
    # Prometheus cannot run the paired test: a rendered drop alert would page on the noisy
    # swings rankmon's own alert rejects (and inhibit it, carrying `job`).
    config = (load_config(DEPLOY / "rankmon" / "config.yaml", environ={})).alerts
    drops = {rule.name for rule in config.rules if isinstance(rule.condition, Drop)}
    assert drops, "the stack's config should show a drop rule"
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules" / "rankmon.yml").read_text())
    alerts = {rule.get("alert") for group in rules["groups"] for rule in group["rules"]}
    assert not drops & alerts


@pytest.mark.prometheus
def test_prometheus_config_and_its_rules_pass_promtool() -> None:
    done = run(
        require_binary("promtool"), "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml")
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.alertmanager
def test_alertmanager_config_passes_amtool() -> None:
    done = run(
        require_binary("amtool"), "check-config", str(DEPLOY / "alertmanager" / "alertmanager.yml")
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.alertmanager
def test_shipped_alertmanager_sends_the_global_alert_instead_of_rankmons_duplicate(
    tmp_path: Path,
) -> None:
    binary = require_binary("prometheus-alertmanager")
    config = tmp_path / "alertmanager.yml"
    config.write_text((DEPLOY / "alertmanager" / "alertmanager.yml").read_text(encoding="utf-8"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [binary, f"--config.file={config}", f"--storage.path={tmp_path / 'data'}"]
    command += [f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]
    server = AlertmanagerServer(url, ServerProcess(command, tmp_path, f"{url}/-/ready"))
    try:
        labels = {"alertname": "ndcg10-floor", "severity": "critical", "window": "5m"}
        server.post_alerts(
            [
                {"labels": {**labels, "model": "v42", "job": "rankmon"}},  # Prometheus, global
                # rankmon's own (labelled with the instance that judged it), same rule and
                # segment, then another segment
                {"labels": {**labels, "model": "v42", "instance": "rankmon-0"}},
                {"labels": {**labels, "model": "v41", "instance": "rankmon-0"}},
            ]
        )
        states = {
            (a["labels"].get("job", ""), a["labels"]["model"]): a["status"]["state"]
            for a in server.alerts()
        }
    finally:
        server.server.stop()
    assert states == {
        ("rankmon", "v42"): "active",
        ("", "v42"): "suppressed",
        ("", "v41"): "active",
    }


def test_image_runs_as_a_numeric_non_root_user_on_a_slim_base() -> None:
    lines = (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines()
    bases = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert bases and all(base.endswith("-slim") for base in bases)
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0].isdigit() and not users[-1].startswith("0")
    assert "healthz" in " ".join(line for line in lines if "HEALTHCHECK" in line or "CMD" in line)


# --- the image builds the C accelerators ------------------------------------------------------


def dockerfile_stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuation lines joined), one list per stage."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    joined = re.sub(r"\\\n\s*", " ", text)
    stages: list[list[str]] = []
    for line in joined.splitlines():
        if line.startswith("FROM "):
            stages.append([])
        if stages and line.strip() and not line.lstrip().startswith("#"):
            stages[-1].append(line.strip())
    return stages


def dockerignore_sends(path: str) -> bool:
    """Whether BuildKit sends `path` with deploy/Dockerfile.dockerignore: the last pattern
    matching the path or one of its parent directories decides, `!` keeps."""
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8")
    parents = [path.rsplit("/", n)[0] for n in range(path.count("/") + 1)]
    sent = True
    for line in ignore.splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        keep = pattern.startswith("!")
        glob = pattern.lstrip("!").strip("/")
        regex = re.escape(glob).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*")
        regex = regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, parent) for parent in parents):
            sent = keep
    return sent


def native_sources() -> set[str]:
    """The C sources and headers of setup.py's extension, which must be every one in monitor/."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    listed = {
        element.value
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg in ("sources", "depends")
        and isinstance(node.value, ast.List)
        for element in node.value.elts
        if isinstance(element, ast.Constant) and isinstance(element.value, str)
    }  # fmt: skip
    assert any(path.endswith(".c") for path in listed), "setup.py declares no C sources"
    on_disk = {str(path.relative_to(ROOT)) for path in (ROOT / "monitor").rglob("*.[ch]")}
    assert on_disk == listed, "setup.py must list every C source and header under monitor/"
    return listed


def test_dockerignore_check_drops_what_it_does_not_list() -> None:
    assert dockerignore_sends("monitor/_speedups.c")
    assert not dockerignore_sends("tests/real_parts/test_deploy.py")
    assert not dockerignore_sends("monitor/__pycache__/cli.cpython-311.pyc")
    assert not dockerignore_sends("monitor/_speedups.cpython-311-x86_64-linux-gnu.so")


def test_image_build_stage_gets_setup_py_and_the_native_sources_and_a_compiler() -> None:
    build = dockerfile_stages()[0]
    copied = [
        source
        for line in build
        if line.startswith("COPY ") and "--from=" not in line
        for source in line.split()[1:-1]
    ]
    for path in ["setup.py", *sorted(native_sources())]:
        assert (ROOT / path).is_file(), path
        assert dockerignore_sends(path), f"{path} is left out of the build context"
        assert any(path == c or path.startswith(c.rstrip("/") + "/") for c in copied), path
    installs = " ".join(line for line in build if line.startswith("RUN ") and "apt-get" in line)
    assert "gcc" in installs.split()
    wheel = build.index(next(line for line in build if "pip wheel" in line))
    assert all(build.index(line) < wheel for line in build if line.startswith("COPY "))


def test_runtime_image_has_no_compiler_and_refuses_to_ship_without_the_accelerators() -> None:
    runtime = dockerfile_stages()[-1]
    assert len(dockerfile_stages()) >= 2
    assert not any("gcc" in line or "apt-get" in line for line in runtime)
    install = next(line for line in runtime if "pip install" in line)
    assert 'python -c "import monitor._speedups"' in install
