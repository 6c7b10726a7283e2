"""The images' Python 3.12 base: the official ``python:3.12-slim`` where it can be pulled, else one
made offline from what this machine has (``python-base.Dockerfile``).

The offline base is Debian's minimal root file system, made by ``debootstrap`` for this machine's
Debian release from the mirror its apt uses, with the packages that hold the libraries this
machine's CPython 3.12 links (found with ``ldd`` and ``dpkg -S``), imported as an image; then that
CPython, pip and this machine's extra certificate authorities on top. It is built once and kept,
labelled with a digest of everything it is made from; a change to any of them makes a new one."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from voice_agent.dev.docker_engine import Engine

OFFICIAL_BASE = "python:3.12-slim"
OFFLINE_BASE = "voice-agent/python:3.12"
KEY_LABEL = "voice-agent.base-key"
DOCKERFILE = Path(__file__).with_name("python-base.Dockerfile")
PULL_TIMEOUT = 180.0
"""Seconds for pulling the official base (about 50 MB); where the registry is unreachable the pull
fails at once (name resolution)."""
DEBOOTSTRAP_TIMEOUT = 900.0
"""Seconds for ``debootstrap`` (about 50 s here)."""
BUILD_TIMEOUT = 600.0
EXTRA_CAS = Path("/usr/local/share/ca-certificates")
"""Where Debian keeps the certificate authorities a machine adds to the system's."""
_LEFT_OUT = {"test", "idlelib", "tkinter", "turtledemo", "__pycache__"}
"""Parts of the standard library an image never runs (the official slim images leave them out too)."""


class BaseImageError(RuntimeError):
    """The base could be neither pulled nor made here; the message says why."""


@dataclass(frozen=True)
class BaseImage:
    name: str
    how: str
    """Pulled, found, or made offline (and in how long)."""


def ensure_base(engine: Engine, progress: Callable[[str], None] = print) -> BaseImage:
    """A Python 3.12 base the Dockerfiles' ``BASE_IMAGE`` can name."""
    if engine.image_exists(OFFICIAL_BASE):
        return BaseImage(OFFICIAL_BASE, f"{OFFICIAL_BASE} (already here)")
    pulled = engine.docker("pull", OFFICIAL_BASE, timeout=PULL_TIMEOUT, check=False)
    if pulled.returncode == 0:
        return BaseImage(OFFICIAL_BASE, f"{OFFICIAL_BASE} (pulled)")
    reason = (pulled.stderr.strip().splitlines() or ["no reason given"])[-1]
    progress(f"base: {OFFICIAL_BASE} cannot be pulled ({reason}); using one made offline")
    recipe = Recipe.of_this_machine()
    key = recipe.key()
    found = engine.docker("image", "inspect", "--format", "{{index .Config.Labels \"" + KEY_LABEL + "\"}}",
                          OFFLINE_BASE, check=False)
    if found.returncode == 0 and found.stdout.strip() == key:
        return BaseImage(OFFLINE_BASE, f"{OFFLINE_BASE} (made offline earlier, same recipe)")
    started = time.monotonic()
    make_offline_base(engine, recipe, key, progress)
    return BaseImage(OFFLINE_BASE, f"{OFFLINE_BASE} (made offline in {time.monotonic() - started:.0f} s)")


@dataclass(frozen=True)
class Recipe:
    """Everything the offline base is made from."""

    python_home: Path
    suite: str
    mirror: str | None
    packages: tuple[str, ...]
    authorities: tuple[Path, ...]

    @classmethod
    def of_this_machine(cls) -> Recipe:
        if sys.version_info[:2] != (3, 12):
            raise BaseImageError(f"the offline base copies this machine's CPython 3.12; this is {sys.version}")
        if os.geteuid() != 0:
            raise BaseImageError("making the offline base needs root (debootstrap)")
        if shutil.which("debootstrap") is None or shutil.which("dpkg") is None:
            raise BaseImageError("making the offline base needs debootstrap and dpkg (Debian's debootstrap package)")
        home = Path(sys.base_prefix)
        suite = _debian_release()
        return cls(home, suite, apt_mirror(suite), tuple(sorted(_packages(_linked_libraries(home)))),
                   tuple(sorted(EXTRA_CAS.glob("*.crt"))))

    def key(self) -> str:
        digest = hashlib.sha256()
        for part in (sys.version, str(self.python_home), self.suite, self.mirror or "", *self.packages,
                     DOCKERFILE.read_text(), " ".join(sorted(_LEFT_OUT))):
            digest.update(part.encode() + b"\0")
        for authority in self.authorities:
            digest.update(authority.read_bytes())
        return digest.hexdigest()[:16]


def _debian_release() -> str:
    fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    if "debian" not in f"{fields.get('ID', '')} {fields.get('ID_LIKE', '')}".replace('"', "").split():
        raise BaseImageError("the offline base is made with debootstrap for this machine's Debian release; "
                             "this machine is not Debian")
    return fields.get("VERSION_CODENAME", "").strip('"') or "bookworm"


def apt_mirror(suite: str, apt_dir: Path = Path("/etc/apt")) -> str | None:
    """The first archive this machine's apt uses for ``suite`` (one-line ``.list`` or deb822
    ``.sources`` files); None leaves the choice to debootstrap."""
    for path in [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]:
        for line in path.read_text().splitlines() if path.is_file() else []:
            words = re.sub(r"\[[^\]]*\]", "", line.split("#", 1)[0]).split()
            if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                return words[1]
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields = {key.strip(): value.split() for key, _, value in
                      (line.partition(":") for line in stanza.splitlines() if line and not line.startswith("#"))}
            if "deb" in fields.get("Types", []) and suite in fields.get("Suites", []) and fields.get("URIs"):
                if fields.get("Enabled", ["yes"])[0] != "no":
                    return fields["URIs"][0]
    return None


def _linked_libraries(home: Path) -> set[str]:
    binaries = [home / "bin" / "python3.12", *home.glob("lib/libpython3*.so*"),
                *(path for path in (home / "lib" / "python3.12" / "lib-dynload").glob("*.so")
                  if not path.name.startswith("_tkinter"))]
    found = set()
    for binary in binaries:
        listing = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30).stdout
        found.update(match for match in re.findall(r"=> (/\S+)", listing) if not match.startswith(str(home)))
    return found


def _packages(libraries: set[str]) -> set[str]:
    """The Debian packages holding ``libraries`` (a merged /usr names each file twice)."""
    packages = set()
    for library in libraries:
        for path in dict.fromkeys((library, os.path.realpath(library), "/usr" + library)):
            owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, timeout=30)
            if owner.returncode == 0:
                packages.add(owner.stdout.split(":", 1)[0].strip())
                break
        else:
            raise BaseImageError(f"no Debian package holds {library}, which this machine's CPython links")
    return packages


def make_offline_base(engine: Engine, recipe: Recipe, key: str, progress: Callable[[str], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="voice-agent-base-") as work:
        rootfs, context = Path(work) / "rootfs", Path(work) / "context"
        debian_image = f"voice-agent/debian:{recipe.suite}"
        include = ",".join(["ca-certificates", "netbase", "tzdata", *recipe.packages])
        progress(f"base: debootstrap --variant=minbase {recipe.suite} from {recipe.mirror or 'its default mirror'} "
                 f"(about a minute)")
        command = ["debootstrap", "--variant=minbase", f"--include={include}", recipe.suite, str(rootfs)]
        made = subprocess.run([*command, *([recipe.mirror] if recipe.mirror else [])], capture_output=True,
                              text=True, timeout=DEBOOTSTRAP_TIMEOUT)
        if made.returncode != 0:
            tail = (made.stdout + made.stderr).strip().splitlines()[-3:]
            raise BaseImageError(f"debootstrap failed (status {made.returncode}): {' / '.join(tail)}")
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / leftover).glob("*"):
                if path.is_file():
                    path.unlink()
        progress(f"base: importing the root file system as {debian_image}")
        archive = subprocess.run(["tar", "-C", str(rootfs), "-c", "."], capture_output=True, timeout=300,
                                 check=True).stdout
        engine.docker("import", "-", debian_image, input=archive, timeout=300)
        _copy_python(recipe.python_home, context / "python")
        (context / "ca-certificates").mkdir()
        for authority in recipe.authorities:
            shutil.copyfile(authority, context / "ca-certificates" / authority.name)
        shutil.copyfile(DOCKERFILE, context / "Dockerfile")
        progress(f"base: adding {recipe.python_home}'s CPython, pip and this machine's certificate authorities")
        engine.docker("build", "--network", "host", "--build-arg", f"DEBIAN_IMAGE={debian_image}",
                      "--label", f"{KEY_LABEL}={key}", "-t", OFFLINE_BASE, str(context), timeout=BUILD_TIMEOUT)
        shutil.rmtree(rootfs, ignore_errors=True)


def _copy_python(home: Path, target: Path) -> None:
    """CPython without its tests, Tk, and installed packages; its scripts that start with a ``#!`` naming
    this machine's path are left out (ensurepip writes pip's anew)."""
    site_packages = home / "lib" / "python3.12" / "site-packages"

    def ignored(directory: str, names: list[str]) -> set[str]:
        here = Path(directory)
        left_out = {name for name in names if name in _LEFT_OUT or name.startswith("_tkinter")}
        if here == site_packages:
            left_out.update(names)
        if here == home / "bin":
            left_out.update(name for name in names if _names_this_machine(here / name, home))
        if here.name.startswith("config-3.12"):
            left_out.update(name for name in names if name.endswith(".a"))
        return left_out

    shutil.copytree(home, target, symlinks=True, ignore=ignored)


def _names_this_machine(script: Path, home: Path) -> bool:
    if script.is_symlink() or not script.is_file():
        return False
    with open(script, "rb") as file:
        return file.read(2) == b"#!" and str(home).encode() in file.readline()
