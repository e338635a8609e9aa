"""Real podman for the container tests (issue 28): runc, ulimits within this machine's hard limits,
private storage, and images built locally (no registry): `localhost/bb:test` (busybox-static),
`localhost/py:test` (busybox + this machine's /usr/bin/python3 and its standard library), the same
with dash as /bin/sh, and with uv and libffi (`localhost/pyuv:test`, for `--requirements` inside).

The storage lives under the temp dir, per uid, and survives the session (the images are built once;
a lock keeps xdist workers from building them twice). Tests tell their containers apart by name.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.wheels import uv_binary

BB_IMAGE = "localhost/bb:test"
PY_IMAGE = "localhost/py:test"
DASH_IMAGE = "localhost/pydash:test"  # /bin/sh is dash, as in Debian-based images (busybox sh elsewhere)
# + uv at /usr/bin/uv: --requirements builds inside it (this machine's python3 is Debian's, whose venv
# needs the python3-venv package's ensurepip wheels: an image's `python -m venv` path is not built here)
UV_IMAGE = "localhost/pyuv:test"
HOST_PYTHON = Path("/usr/bin/python3")
ROOT = Path(tempfile.gettempdir()) / f"gpudeck-podman-{os.getuid()}"
CDI_VENDOR = "gpudeck.test/gpu"
CONTAINERS_CONF = """\
[engine]
runtime = "runc"
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
"""
PY_SKIP = ("test", "idlelib", "tkinter", "ensurepip", "lib2to3", "turtledemo", "pydoc_data", "config-3")


def podman_env() -> dict[str, str]:
    return {
        "CONTAINERS_CONF": str(ROOT / "containers.conf"),
        "CONTAINERS_STORAGE_CONF": str(ROOT / "storage.conf"),
    }


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
        env={**os.environ, **podman_env()},
    )


def _configure() -> None:
    ROOT.mkdir(mode=0o700, exist_ok=True)
    (ROOT / "containers.conf").write_text(CONTAINERS_CONF)
    (ROOT / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{ROOT}/root"\nrunroot = "{ROOT}/run"\n'
    )


def _busybox_tree(dest: Path) -> None:
    (dest / "bin").mkdir(parents=True)
    shutil.copy2("/bin/busybox", dest / "bin" / "busybox")
    applets = subprocess.run(
        ["/bin/busybox", "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    for applet in applets:
        if applet != "busybox":
            os.symlink("busybox", dest / "bin" / applet)
    (dest / "tmp").mkdir(mode=0o1777)
    (dest / "usr" / "bin").mkdir(parents=True)
    (dest / "etc").mkdir()
    (dest / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")


def _with_libraries(dest: Path, binary: Path) -> None:
    """`binary`'s shared libraries (as ldd names them) copied into the tree."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = [p for line in out.splitlines() for p in line.split() if p.startswith("/")]
    for lib in libs:
        target = dest / lib.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(lib), target)


def _uv_tree(dest: Path, uv: Path) -> None:
    """uv, and libffi for ctypes (the agent that builds the environment inside imports it)."""
    shutil.copy2(uv, dest / "usr" / "bin" / "uv")
    _with_libraries(dest, uv)
    for ctypes_module in (Path("/usr/lib") / HOST_PYTHON.resolve().name / "lib-dynload").glob("_ctypes.*.so"):
        _with_libraries(dest, ctypes_module)


def _python_tree(dest: Path) -> None:
    """The host's python3 with the libraries ldd names and its standard library (slimmed)."""
    real = HOST_PYTHON.resolve()
    shutil.copy2(real, dest / "usr" / "bin" / real.name)
    os.symlink(real.name, dest / "usr" / "bin" / "python3")
    os.symlink("python3", dest / "usr" / "bin" / "python")
    _with_libraries(dest, real)
    stdlib = Path("/usr/lib") / real.name
    shutil.copytree(
        stdlib,
        dest / "usr" / "lib" / real.name,
        symlinks=True,
        ignore=lambda d, names: [n for n in names if n in PY_SKIP or n.startswith("config-3")],
    )
    (dest / "lib64").mkdir(exist_ok=True)


def _import(tree: Path, image: str) -> None:
    archive = tree.with_suffix(".tar")
    with tarfile.open(archive, "w") as tar:
        tar.add(tree, arcname=".")
    podman("import", "--change", "ENV=PATH=/usr/bin:/bin", "-q", str(archive), image)
    archive.unlink()


def _build_images() -> None:
    with open(ROOT / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        have = podman("images", "--format", "{{.Repository}}:{{.Tag}}", check=False).stdout.split()
        work = Path(tempfile.mkdtemp(dir=ROOT))
        try:
            if BB_IMAGE not in have:
                _busybox_tree(work / "bb")
                _import(work / "bb", BB_IMAGE)
            if PY_IMAGE not in have and HOST_PYTHON.exists():
                _busybox_tree(work / "py")
                _python_tree(work / "py")
                _import(work / "py", PY_IMAGE)
            if DASH_IMAGE not in have and HOST_PYTHON.exists() and os.path.exists("/bin/dash"):
                _busybox_tree(work / "dash")
                _python_tree(work / "dash")
                os.unlink(work / "dash" / "bin" / "sh")
                shutil.copy2("/bin/dash", work / "dash" / "bin" / "dash")
                os.symlink("dash", work / "dash" / "bin" / "sh")
                _import(work / "dash", DASH_IMAGE)
            uv = uv_binary()
            if UV_IMAGE not in have and HOST_PYTHON.exists() and uv is not None:
                _busybox_tree(work / "uv")
                _python_tree(work / "uv")
                _uv_tree(work / "uv", Path(uv))
                _import(work / "uv", UV_IMAGE)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def unusable() -> str | None:
    """Why podman cannot run here (None: it can)."""
    for tool in ("podman", "runc", "/bin/busybox"):
        if not shutil.which(tool):
            return f"{tool} is not installed (CI installs podman, runc and busybox-static)"
    return None


@pytest.fixture(scope="session")
def podman_images() -> Iterator[dict[str, str]]:
    """The environment podman needs here (set for the whole session: the agent under test inherits it)."""
    why = unusable()
    if why:
        pytest.skip(why)
    _configure()
    _build_images()
    probe = podman("run", "--rm", "--network", "none", BB_IMAGE, "true", check=False)
    if probe.returncode != 0:
        pytest.skip(f"podman cannot run a container here: {probe.stderr.strip()[-200:]}")
    saved = {k: os.environ.get(k) for k in podman_env()}
    os.environ.update(podman_env())
    yield podman_env()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def containers_named(name: str) -> list[str]:
    """Containers (any state) whose name holds `name`: nothing of a job may be left."""
    return podman("ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}").stdout.split()


def conmons_of(name: str) -> list[int]:
    """conmon processes still running for a container whose name starts with `name`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = (Path("/proc") / entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"conmon") and any(a.startswith(name.encode()) for a in argv):
                found.append(int(entry))
    return found


CDI_LOCK = ROOT.parent / "gpudeck-cdi.lock"  # /etc/cdi is the machine's: tests take turns with it
FAKE_CDI = Path("/etc/cdi/gpudeck-test.json")


@contextlib.contextmanager
def cdi_turn(exclusive: bool) -> Iterator[None]:
    with open(CDI_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield


@contextlib.contextmanager
def fake_cdi_gpus(count: int = 2) -> Iterator[str]:
    """A CDI spec of a test vendor: device N sets FAKE_GPU_N in the container (no hardware)."""
    spec = {
        "cdiVersion": "0.3.0",
        "kind": CDI_VENDOR,
        "devices": [
            {"name": str(i), "containerEdits": {"env": [f"FAKE_GPU_{i}=present"]}} for i in range(count)
        ],
    }
    with cdi_turn(exclusive=True):
        FAKE_CDI.parent.mkdir(parents=True, exist_ok=True)
        FAKE_CDI.write_text(json.dumps(spec))
        try:
            yield CDI_VENDOR
        finally:
            FAKE_CDI.unlink()


@contextlib.contextmanager
def local_registry(root: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """Debian's docker-registry on 127.0.0.1 (plain HTTP): (its address, the env that lets podman
    use it: a registries.conf marking it insecure)."""
    from tests.support.sshd import free_port
    from tests.support.waiting import wait_for

    if not shutil.which("docker-registry"):
        pytest.skip("docker-registry is not installed (CI installs it)")
    port = free_port()
    address = f"127.0.0.1:{port}"
    config = root / "registry.yml"
    config.write_text(
        f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {root / 'data'}\nhttp:\n  addr: {address}\n"
    )
    registries = root / "registries.conf"
    registries.write_text(f'[[registry]]\nlocation = "{address}"\ninsecure = true\n')
    env = {"CONTAINERS_REGISTRIES_CONF": str(registries)}
    log = open(root / "registry.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=log)
    try:
        import socket

        def up() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return True
            except OSError:
                return False

        wait_for(up, timeout=20, what="the registry to listen")
        yield address, env
    finally:
        proc.kill()
        proc.wait()
        log.close()


@pytest.fixture(scope="session")
def dockerd(podman_images: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A dockerd of the session's own (FACTS.md: by hand, no bridge, no iptables), holding the test
    images (`podman save | docker load`); its DOCKER_HOST."""
    from tests.support.waiting import wait_for

    if not shutil.which("dockerd") or not shutil.which("docker"):
        pytest.skip("docker.io is not installed")
    root = tmp_path_factory.mktemp("dockerd")
    sock = root / "docker.sock"
    log = open(root / "dockerd.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            "dockerd",
            "--data-root",
            str(root / "data"),
            "--exec-root",
            str(root / "exec"),
            "-H",
            f"unix://{sock}",
            "--pidfile",
            str(root / "docker.pid"),
            "--bridge=none",
            "--iptables=false",
        ],
        stdout=log,
        stderr=log,
    )
    host = f"unix://{sock}"
    env = {**os.environ, "DOCKER_HOST": host}
    try:
        wait_for(
            lambda: subprocess.run(["docker", "info"], env=env, capture_output=True).returncode == 0,
            timeout=30,
            what="dockerd to answer",
        )
        archive = root / "images.tar"
        subprocess.run(
            ["podman", "save", "-m", "-o", str(archive), BB_IMAGE, PY_IMAGE],
            check=True,
            env={**os.environ, **podman_env()},
            capture_output=True,
            timeout=120,
        )
        subprocess.run(
            ["docker", "load", "-i", str(archive)], check=True, env=env, capture_output=True, timeout=120
        )
        yield host
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        unmount_under(root)  # dockerd leaves its netns bind mount: pytest could not remove the dir


def unmount_under(root: Path) -> None:
    with open("/proc/mounts") as f:
        points = [line.split()[1] for line in f if line.split()[1].startswith(str(root))]
    for point in sorted(points, reverse=True):
        subprocess.run(["umount", point], capture_output=True, check=False)
