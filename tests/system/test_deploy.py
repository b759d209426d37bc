"""What deploy/ ships holds together with Baton itself, without a container engine or a cluster: every `baton`
command line it runs parses with Baton's own parser, every `BATON_*` variable it names is a setting Baton reads
(with a value Baton accepts), every probe and health check asks for a path Baton serves on the port it listens
on, the Kubernetes objects select and reference one another, compose starts Baton after PostgreSQL is healthy,
and the image's health check, run as the image runs it, tells a serving Baton from a stopped one."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from baton.cli.main import build_parser
from baton.environment.clock import SYSTEM
from baton.environment.settings import Settings
from baton.web import create_app
from bench.webhook_race import free_port
from support.databases import scratch_database

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
SETTINGS = {f"BATON_{name.upper()}" for name in Settings.model_fields}
CLIENT = {"BATON_URL", "BATON_TOKEN"}  # what the agent's `baton` command reads (the GitHub Action sets them)
_BATON_NAME = re.compile(r"\bBATON_[A-Z][A-Z0-9_]*")
# compose's ${NAME}, ${NAME:-default}, ${NAME:?error}
_INTERPOLATED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?][^}]*)?\}")


# --- Baton's own parser and app ------------------------------------------------------------------------------


class NotBaton(AssertionError):
    """A command line Baton's parser refuses."""


def parsed(argv: list[str]) -> Any:
    """`argv` (starting with `baton`) as Baton's own parser reads it; NotBaton if it refuses it."""
    if not argv or Path(argv[0]).name != "baton":
        raise NotBaton(f"{argv}: not a `baton` command")
    try:
        args = build_parser().parse_args(argv[1:])
    except SystemExit as refused:
        raise NotBaton(f"{shlex.join(argv)}: Baton's parser refuses it (exit {refused.code})") from None
    assert callable(args.run)
    return args


@pytest.mark.parametrize("argv", [["baton", "serv"], ["baton", "serve", "--hots", "0.0.0.0"], ["baton", "db"],
                                  ["baton", "db", "upgrad"], ["python", "-m", "baton", "serve"]])  # fmt: skip
def test_the_command_check_refuses_what_baton_would_refuse(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(NotBaton):
        parsed(argv)
    capsys.readouterr()


@pytest.fixture
def served_paths(sqlite_url: str) -> set[str]:
    """The paths Baton's app answers GET on, from the app factory itself."""
    app = create_app(Settings(database_url=sqlite_url, _env_file=None), lanes=False)
    app.state.parts.engine.dispose()
    return {route.path for route in app.routes if "GET" in (getattr(route, "methods", None) or ())}


def accepted(values: Mapping[str, str], where: str) -> None:
    """Every BATON_* name is a setting, and Baton reads the values given without complaint."""
    values = {name: value for name, value in values.items() if name.startswith("BATON_")}
    unknown = sorted(set(values) - SETTINGS)
    assert not unknown, f"{where} names settings Baton does not have: {unknown}"
    names = {name.removeprefix("BATON_").lower(): value for name, value in values.items()}
    Settings(_env_file=None, **names)  # a value Baton cannot read raises here, naming it


# --- the Dockerfile ------------------------------------------------------------------------------------------


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [rest for word, rest in self.instructions if word == keyword]

    def last(self, keyword: str) -> str | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for rest in self.all("ENV"):
            for pair in shlex.split(rest):
                name, _, value = pair.partition("=")
                values[name] = value
        return values


def dockerfile_stages(path: Path = DEPLOY / "Dockerfile") -> list[Stage]:
    """The Dockerfile's stages, each instruction with its continuation lines joined; comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue  # Docker drops comment lines, inside a continued instruction too
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, rest = pending.strip().partition(" ")
        instructions.append((word.upper(), " ".join(rest.split())))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued instruction"
    stages: list[Stage] = []
    for word, rest in instructions:
        if word == "FROM":
            parts = rest.split()
            stages.append(Stage(parts[0], parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None))
        else:
            assert stages, f"{word} before any FROM"
            stages[-1].instructions.append((word, rest))
    return stages


def exec_form(rest: str) -> list[str]:
    """An instruction's JSON (exec) form; the shell form would run `baton` under /bin/sh, which stops signals."""
    assert rest.startswith("["), f"{rest!r} is not in exec form"
    argv = json.loads(rest)
    assert isinstance(argv, list) and all(isinstance(word, str) for word in argv)
    return argv


def image() -> Stage:
    return dockerfile_stages()[-1]


def entrypoint() -> list[str]:
    found = image().last("ENTRYPOINT")
    assert found is not None, "the image names no ENTRYPOINT"
    return exec_form(found)


def healthcheck() -> list[str]:
    found = image().last("HEALTHCHECK")
    assert found is not None, "the image has no HEALTHCHECK"
    _, _, command = found.partition("CMD ")
    return exec_form(command)


def test_the_image_runs_baton_serve_as_a_user_of_its_own_listening_on_every_interface() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2, "a builder stage and a runtime stage"
    builder, runtime = stages[0], stages[-1]
    assert builder.name and any("pip wheel" in rest for rest in builder.all("RUN")), "the builder builds a wheel"
    assert re.fullmatch(r"python:3\.11-slim(-[a-z]+)?", runtime.base), runtime.base
    installs = [rest for rest in runtime.all("RUN") if "pip install" in rest]
    assert installs and all("--no-index" in rest and f"from={builder.name}" in rest for rest in installs), (
        "the runtime stage installs only the builder's wheels"
    )
    assert not runtime.all("COPY"), "nothing but the wheels reaches the runtime stage"
    user = runtime.last("USER")
    assert user is not None and user.split(":")[0] not in ("root", "0"), user
    command = runtime.last("CMD")
    assert command is not None
    assert parsed(entrypoint() + exec_form(command)).command == "serve"
    env = runtime.env()
    accepted(env, "the Dockerfile's ENV")
    assert env["BATON_HOST"] == "0.0.0.0"
    assert runtime.all("EXPOSE") == [env["BATON_PORT"]]
    volumes = [Path(p) for rest in runtime.all("VOLUME") for p in exec_form(rest)]
    assert any(Path(env["BATON_SPOOL_DIR"]).is_relative_to(volume) for volume in volumes), "the spool is a volume"


def test_what_the_image_copies_is_in_the_build_context() -> None:
    """The build context is the repository's top (`docker build -f deploy/Dockerfile .`), filtered by
    .dockerignore, which leaves out everything it does not bring back with `!`."""
    kept = [line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line.startswith("!")]
    for stage in dockerfile_stages():
        for rest in stage.all("COPY"):
            sources = [word for word in rest.split()[:-1] if not word.startswith("--")]
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                assert source.rstrip("/") in kept, f"COPY {source}: .dockerignore leaves it out of the context"


@contextmanager
def baton_serve(tmp_path: Path, database_url: str) -> Iterator[dict[str, str]]:
    """A real `baton serve` on 127.0.0.1, on the database at `database_url`, as the image's settings run it; yields its
    environment once it answers."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env |= {"BATON_DATABASE_URL": database_url, "BATON_HOST": "127.0.0.1", "BATON_PORT": str(free_port()),
            "BATON_SPOOL_DIR": str(tmp_path / "spool")}  # fmt: skip
    serving = subprocess.Popen([sys.executable, "-m", "baton.cli", "serve"], env=env, cwd=tmp_path,
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        assert serving.stderr is not None
        for line in serving.stderr:  # uvicorn says it runs once it is up
            if "Uvicorn running on" in line:
                assert f"127.0.0.1:{env['BATON_PORT']}" in line, line
                break
        yield env
    finally:
        serving.terminate()
        serving.wait(30)


def test_the_images_health_check_tells_a_serving_baton_from_a_stopped_one(tmp_path: Path, sqlite_url: str) -> None:
    """The HEALTHCHECK's own command, run as the image runs it (its `python`, here this one), against a real
    `baton serve` on the port the settings name."""
    command = healthcheck()
    assert command[0] == "python"
    check = [sys.executable, *command[1:]]
    with baton_serve(tmp_path, sqlite_url) as env:
        healthy = subprocess.run(check, env=env, capture_output=True, text=True, timeout=30, check=False)
    assert healthy.returncode == 0, healthy.stderr
    stopped = subprocess.run(check, env=env, capture_output=True, text=True, timeout=30, check=False)
    assert stopped.returncode != 0


def test_the_health_check_asks_for_a_path_baton_serves(served_paths: set[str]) -> None:
    asked = re.findall(r"'(/[a-z]+)'", " ".join(healthcheck()))
    assert asked == ["/readyz"] and set(asked) <= served_paths, (asked, served_paths)


# --- compose -------------------------------------------------------------------------------------------------


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, equals, value = line.partition("=")
            assert equals, f"{path.name}: {line!r} is not NAME=value"
            values[name.strip()] = value.strip()
    return values


def baton_services() -> dict[str, dict[str, Any]]:
    return {name: service for name, service in compose()["services"].items() if name != "postgres"}


def test_compose_runs_migrations_then_one_serve_and_two_workers_after_postgresql_is_healthy() -> None:
    services = compose()["services"]
    postgres = services["postgres"]
    assert postgres["healthcheck"]["test"], "postgres has a health check"
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in compose()["volumes"], "PostgreSQL keeps its data in a named volume"
    ours = baton_services()
    commands = {name: parsed(entrypoint() + service["command"]).command for name, service in ours.items()}
    assert sorted(commands.values()) == ["db", "serve", "worker"], commands
    for name, service in ours.items():
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy", name
        context = (DEPLOY / service["build"]["context"]).resolve()
        assert context == ROOT and (context / service["build"]["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
        if commands[name] != "db":
            migrate = next(other for other, command in commands.items() if command == "db")
            assert service["depends_on"][migrate]["condition"] == "service_completed_successfully", name
            assert service["environment"]["BATON_WORKER"] == "external", name
        if commands[name] != "serve":
            assert service["healthcheck"] == {"disable": True}, f"{name} serves no HTTP for the image's check"
        if commands[name] == "worker":
            assert service["deploy"]["replicas"] == 2


def test_compose_hands_baton_its_key_as_a_file_and_its_settings_from_env(served_paths: set[str]) -> None:
    document = compose()
    example = env_file(DEPLOY / ".env.example")
    for name, service in baton_services().items():
        assert service["env_file"] == ".env", name
        environment = {key: value for key, value in service["environment"].items() if key.startswith("BATON_")}
        key_path = environment["BATON_PRIVATE_KEY_PATH"]
        secret = Path(key_path).name
        assert key_path == f"/run/secrets/{secret}" and secret in service["secrets"] and secret in document["secrets"]
        seen = {**image().env(), **{k: v for k, v in example.items() if k.startswith("BATON_")}, **environment}
        seen = {key: _INTERPOLATED.sub(lambda m: example[m.group(1)], value) for key, value in seen.items()}
        accepted(seen, f"compose service {name}")
        if "ports" in service:
            published = [entry.rsplit(":", 1)[1] for entry in service["ports"]]
            assert published == [seen["BATON_PORT"]], "the published port is the one Baton listens on"
            spools = [entry.split(":")[1] for entry in service.get("volumes", [])]
            assert seen["BATON_SPOOL_DIR"] in spools, "the spool is a volume"


def test_every_variable_compose_needs_is_named_in_env_example() -> None:
    needed = set(_INTERPOLATED.findall((DEPLOY / "compose.yaml").read_text(encoding="utf-8")))
    named = set(env_file(DEPLOY / ".env.example"))
    assert needed and needed <= named, sorted(needed - named)


# --- Kubernetes ----------------------------------------------------------------------------------------------


def manifests() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(KUBERNETES.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if document is not None:
                    yield path.name, document


def objects(kind: str) -> list[dict[str, Any]]:
    return [document for _, document in manifests() if document["kind"] == kind]


def pod_templates() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{o['kind']}/{o['metadata']['name']}", o["spec"]["template"]) for o in objects("Deployment") + objects("Job")
    ]


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def test_the_kustomization_lists_exactly_the_files_present() -> None:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text(encoding="utf-8"))
    present = {path.name for path in KUBERNETES.iterdir() if path.name != "kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(present)
    assert [entry["name"] for entry in kustomization["images"]] == ["baton"]


def test_every_object_is_named_and_each_name_is_used_once() -> None:
    seen = []
    for path, document in manifests():
        assert document.get("apiVersion") and document.get("kind") and document["metadata"].get("name"), path
        seen.append((document["kind"], document["metadata"]["name"]))
    assert len(seen) == len(set(seen)), seen
    assert {"Deployment", "Job", "Service", "Ingress", "PodDisruptionBudget", "Secret", "ConfigMap"} <= {
        kind for kind, _ in seen
    }


def test_selectors_match_the_pods_they_mean() -> None:
    templates = pod_templates()
    for deployment in objects("Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selects(deployment["spec"]["selector"]["matchLabels"], labels), deployment["metadata"]["name"]
    selected = [(s["metadata"]["name"], s["spec"]["selector"]) for s in objects("Service")]
    selected += [(p["metadata"]["name"], p["spec"]["selector"]["matchLabels"]) for p in objects("PodDisruptionBudget")]
    for name, selector in selected:
        matched = [where for where, template in templates if selects(selector, template["metadata"]["labels"])]
        assert matched and all(where.startswith("Deployment/") for where in matched), (name, matched)
    deployments = objects("Deployment")
    for one in deployments:  # no Deployment's selector takes another's pods
        labels = one["spec"]["template"]["metadata"]["labels"]
        owners = [d["metadata"]["name"] for d in deployments if selects(d["spec"]["selector"]["matchLabels"], labels)]
        assert owners == [one["metadata"]["name"]], owners


def container_ports(template: Mapping[str, Any]) -> dict[str | int, int]:
    ports: dict[str | int, int] = {}
    for container in template["spec"]["containers"]:
        for port in container.get("ports", []):
            ports[port["containerPort"]] = port["containerPort"]
            if "name" in port:
                ports[port["name"]] = port["containerPort"]
    return ports


def test_services_and_the_ingress_reach_a_port_the_pods_declare() -> None:
    templates = [template for _, template in pod_templates()]
    services = {s["metadata"]["name"]: s for s in objects("Service")}
    for service in services.values():
        pods = [t for t in templates if selects(service["spec"]["selector"], t["metadata"]["labels"])]
        for port in service["spec"]["ports"]:
            assert all(port["targetPort"] in container_ports(t) for t in pods), (service["metadata"]["name"], port)
    for ingress in objects("Ingress"):
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                declared = services[backend["name"]]["spec"]["ports"]
                wanted = backend["port"]
                assert any(wanted.get("name") == p.get("name") or wanted.get("number") == p["port"] for p in declared)
        assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"] == "25m"


def container_env(container: Mapping[str, Any]) -> dict[str, str | None]:
    """The BATON_* variables a container sees: its image's ENV, its ConfigMaps, its own `env` (values from a
    Secret as None)."""
    maps = {m["metadata"]["name"]: m.get("data", {}) for m in objects("ConfigMap")}
    seen: dict[str, str | None] = dict(image().env())
    for source in container.get("envFrom", []):
        seen |= maps[source["configMapRef"]["name"]]
    for variable in container.get("env", []):
        seen[variable["name"]] = variable.get("value")
    return {name: value for name, value in seen.items() if name.startswith("BATON_")}


def test_pods_run_baton_commands_with_settings_baton_has() -> None:
    commands = []
    for where, template in pod_templates():
        assert template["spec"]["securityContext"]["runAsNonRoot"] is True, where
        for container in template["spec"]["containers"]:
            assert container["image"] == "baton", where
            argv = container.get("command") or entrypoint()
            commands.append(parsed(argv + container.get("args", [])).command)
            seen = container_env(container)
            accepted({name: value for name, value in seen.items() if value is not None}, where)
            assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
    assert sorted(commands) == ["db", "serve", "worker"]


def test_probes_ask_for_paths_baton_serves_on_the_port_it_listens_on(served_paths: set[str]) -> None:
    probed = {}
    for where, template in pod_templates():
        ports = container_ports(template)
        for container in template["spec"]["containers"]:
            listens = int(str(container_env(container)["BATON_PORT"]))
            for probe in ("readinessProbe", "livenessProbe"):
                if probe in container:
                    asked = container[probe]["httpGet"]
                    assert asked["path"] in served_paths, (where, asked)
                    assert ports[asked["port"]] == listens, (where, asked)
                    probed[probe] = asked["path"]
    assert probed == {"readinessProbe": "/readyz", "livenessProbe": "/healthz"}


def test_every_secret_and_config_map_a_pod_reads_holds_the_key_it_reads() -> None:
    secrets = {s["metadata"]["name"]: set(s.get("stringData", {})) | set(s.get("data", {})) for s in objects("Secret")}
    maps = {m["metadata"]["name"] for m in objects("ConfigMap")}
    for where, template in pod_templates():
        volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
        for volume in volumes.values():
            if "secret" in volume:
                items = volume["secret"].get("items", [])
                assert {i["key"] for i in items} <= secrets[volume["secret"]["secretName"]], where
        for container in template["spec"]["containers"]:
            for variable in container.get("env", []):
                reference = variable.get("valueFrom", {}).get("secretKeyRef")
                if reference:
                    assert reference["key"] in secrets[reference["name"]], (where, reference)
            for source in container.get("envFrom", []):
                assert source["configMapRef"]["name"] in maps, where
            key_path = container_env(container).get("BATON_PRIVATE_KEY_PATH")
            if key_path:  # the key file lies in a mounted Secret, under the name the Secret's item gives it
                files = {f"{mount['mountPath']}/{item['path']}" for mount in container.get("volumeMounts", [])
                         for item in volumes[mount["name"]].get("secret", {}).get("items", [])}  # fmt: skip
                assert key_path in files, (where, key_path, files)


# --- systemd -------------------------------------------------------------------------------------------------


def unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A unit file's sections, each a list of its settings in order (a key may repeat, as systemd allows)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
            continue
        key, equals, value = line.partition("=")
        assert current is not None and equals, f"{path.name}: {line!r}"
        current.append((key.strip(), value.strip()))
    return sections


UNITS = sorted((DEPLOY / "systemd").glob("*.service"))


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_each_unit_runs_a_baton_command_as_baton_with_settings_baton_has(path: Path) -> None:
    service = unit(path)["Service"]
    settings = dict(service)
    starts = [value for key, value in service if key == "ExecStart"]
    assert len(starts) == 1
    assert parsed(shlex.split(starts[0])).command in ("serve", "worker")
    assert settings["User"] not in ("root", "0")
    env: dict[str, str] = {}
    for key, value in service:
        if key == "Environment":
            env |= dict(pair.split("=", 1) for pair in shlex.split(value))
    named_file = Path(settings["EnvironmentFile"]).name
    env |= env_file(DEPLOY / "systemd" / f"{named_file}.example")
    accepted({name: value.replace("%d", "/run/credentials/x") for name, value in env.items()}, path.name)
    credential = settings["LoadCredential"].split(":")[0]
    assert env["BATON_PRIVATE_KEY_PATH"] == f"%d/{credential}"
    assert unit(path)["Install"] == [("WantedBy", "multi-user.target")]


def test_there_is_a_unit_for_serve_and_one_per_worker() -> None:
    commands = {path.name: parsed(shlex.split(dict(unit(path)["Service"])["ExecStart"])).command for path in UNITS}
    assert commands == {"baton.service": "serve", "baton-worker@.service": "worker"}


# --- everything in deploy/ -----------------------------------------------------------------------------------


def test_every_baton_variable_named_in_deploy_is_a_setting() -> None:
    named: dict[str, set[str]] = {}
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file()):
        for name in _BATON_NAME.findall(path.read_text(encoding="utf-8")):
            named.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    assert len(named) >= 10, sorted(named)  # the README names most of them
    unknown = {name: sorted(where) for name, where in named.items() if name not in SETTINGS | CLIENT}
    assert not unknown, f"not settings Baton has: {unknown}"


_DOCKER_VALUED = {"-p", "--publish", "-v", "--volume", "-e", "--env", "--env-file", "--name", "-u", "--user",
                  "--network", "--mount", "-w", "--workdir"}  # fmt: skip


def _readme_commands(text: str) -> list[list[str]]:
    """Every `baton` command line deploy/README.md gives, as argv: in its shell blocks (a line continued with
    `\\` is one line) and in its inline code, run as `baton …`, as a path ending in `/baton`, or as the image's
    arguments (`docker run [options] baton …`, whose entrypoint is `baton`)."""
    blocks = re.findall(r"^```(?:sh|shell|bash)\n(.*?)^```", text, re.S | re.M)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    inline = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", re.sub(r"^```.*?^```", "", text,
                                                                                 flags=re.S | re.M))]  # fmt: skip
    found = []
    for line in lines + inline:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # not a shell line (an apostrophe in prose)
            continue
        if words[:2] == ["docker", "run"]:
            rest = words[2:]
            while rest and rest[0].startswith("-"):  # docker's own options, and the values some take
                rest = rest[2:] if rest[0] in _DOCKER_VALUED else rest[1:]
            if rest and rest[0].split(":")[0] == "baton":
                found.append(["baton", *(rest[1:] or ["serve"])])  # no arguments: the image's CMD, serve
            continue
        if words and words[0] == "systemd-run":
            words = [word for word in words if not word.startswith("-")][1:]
        if words and Path(words[0]).name == "baton" and len(words) > 1:
            found.append(["baton", *words[1:]])
    return found


def test_every_baton_command_deploy_readme_gives_is_one_baton_takes(capsys: pytest.CaptureFixture[str]) -> None:
    commands = _readme_commands((DEPLOY / "README.md").read_text(encoding="utf-8"))
    given = {shlex.join(argv) for argv in commands}
    assert {"baton serve", "baton worker", "baton db upgrade"} <= given, sorted(given)
    assert any(argv[:2] == ["baton", "setup"] and "--github-url" in argv for argv in commands), sorted(given)
    for argv in commands:
        parsed(argv)
    capsys.readouterr()
    # the reading itself: a misspelt command in the README would be found and refused
    (misspelt,) = _readme_commands("Run `baton db upgrad` first.")
    with pytest.raises(NotBaton):
        parsed(misspelt)
    capsys.readouterr()


# --- the backups deploy/README.md describes ------------------------------------------------------------------


def documented(starts: str) -> list[str]:
    """The command line deploy/README.md gives that starts with `starts`, as argv."""
    lines = [
        line for line in (DEPLOY / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith(starts)
    ]
    assert len(lines) == 1, f"deploy/README.md gives {len(lines)} commands starting {starts!r}"
    return shlex.split(lines[0])


def baton_at(url: str, *argv: str) -> str:
    """What a `baton` command prints, run on the database at `url`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    done = subprocess.run([sys.executable, "-m", "baton.cli", *argv], env=env | {"BATON_DATABASE_URL": url},
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return done.stdout


def test_sqlites_online_backup_as_documented_copies_what_a_running_baton_stored(
    tmp_path: Path, sqlite_url: str
) -> None:
    from baton.store import make_engine
    from baton.store.inbox import Inbox, Incoming
    from baton.store.migrate import head

    live, copy = Path(sqlite_url.removeprefix("sqlite:///")), tmp_path / "backup.db"
    assert live.parent == tmp_path  # the documented paths are replaced by this folder
    with baton_serve(tmp_path, sqlite_url):  # Baton has the database open while it is copied
        engine = make_engine(f"sqlite:///{live}")
        try:
            inbox = Inbox(engine, SYSTEM)
            inbox.receive(Incoming("before-the-backup", "ping", None, None, "{}"))
            argv = documented('python -c "import sqlite3')
            argv = [sys.executable, *(word.replace("/var/lib/baton", str(tmp_path)) for word in argv[1:])]
            subprocess.run(argv, check=True, timeout=60)
            inbox.receive(Incoming("after-the-backup", "ping", None, None, "{}"))
        finally:
            engine.dispose()
    listed = baton_at(f"sqlite:///{copy}", "deliveries")
    assert "before-the-backup" in listed and "after-the-backup" not in listed, listed
    assert baton_at(f"sqlite:///{copy}", "db", "upgrade").strip() == f"database at revision {head()}"


@pytest.mark.postgres
def test_pg_dump_and_pg_restore_as_documented_carry_baton_to_another_database(tmp_path: Path) -> None:
    from baton.store import make_engine
    from baton.store.inbox import Inbox, Incoming

    with scratch_database("baton_dump") as (admin, source), scratch_database("baton_restore") as (_, target):
        # pg_dump and pg_restore take libpq's URLs, which name no driver
        source_url, target_url = (admin.url.set(drivername="postgresql", database=name).render_as_string(False)
                                  for name in (source, target))  # fmt: skip
        engine = make_engine(source_url)
        try:
            Inbox(engine, SYSTEM).receive(Incoming("kept-by-the-dump", "ping", None, None, "{}"))
        finally:
            engine.dispose()
        for starts, url in (("pg_dump ", source_url), ("pg_restore ", target_url)):
            argv = [word.replace("$DATABASE_URL", url) for word in documented(starts)]
            subprocess.run(argv, cwd=tmp_path, check=True, timeout=120, capture_output=True)
        assert "kept-by-the-dump" in baton_at(target_url, "deliveries")
