#!/usr/bin/python3
"""Read packaging/'s recipes as Spack and EasyBuild would, without them
(neither is a Debian package): print what each recipe declares as JSON, for
dist_test.go to check against the tarballs and to carry out.

  packaging_check.py spack PACKAGE_PY SOURCE PREFIX
      versions, url, licence, maintainers, requirements, cgo, go build's args
      (read in the unpacked source tarball SOURCE), and the post-install
      steps: the commands it runs (recorded, for the test to run), and the
      files it installs, copied for real into PREFIX
  packaging_check.py easyconfig FILE.eb ARCH  sources, checksums, licence, docs, sanity paths and commands

Spack's side is the part of its API the recipe uses (GoPackage's default
build_args, copied from spack-packages' build_systems/go.py; version,
depends_on, run_after, Executable, the completion paths); EasyBuild's is
the easyconfig namespace (SYSTEM, ARCH) and its %(name)s templates.
"""
import json
import os
import pathlib
import shutil
import sys
import types


def spack(path, source, prefix):
    declared = {"versions": {}, "depends_on": [], "calls": [], "licenses": [], "maintainers": [], "requires": []}

    class Version(str):
        pass

    class GoPackage:
        cgo_enabled = False
        name = "gpulaunch"

        @property
        def build_args(self):
            return ["-p", "2", "-modcacherw", "-ldflags", "-s -w", "-o", self.name]

        @property
        def check_args(self):
            return []

    class Prefix(str):
        def __getattr__(self, part):
            return Prefix(str(pathlib.PurePosixPath(self) / part))

    def version(v, **kw):
        declared["versions"][v] = kw

    def depends_on(spec, **kw):
        declared["depends_on"].append(spec)

    def license(spdx, **kw):
        declared["licenses"].append(spdx)

    def maintainers(*names):
        declared["maintainers"].extend(names)

    def requires(*specs, **kw):
        declared["requires"].extend(specs)

    def install(src, dest):
        shutil.copy(src, dest)

    def run_after(phase):
        def mark(f):
            f.run_after = phase
            return f
        return mark

    class Executable:
        def __init__(self, path):
            self.path = path

        def __call__(self, *args, output=None):
            declared["calls"].append({"args": list(args), "output": output.name})

    class Sink:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    pkgmod = types.ModuleType("spack.package")
    pkgmod.__dict__.update(
        version=version, depends_on=depends_on, run_after=run_after, Executable=Executable,
        license=license, maintainers=maintainers, requires=requires, install=install,
        mkdirp=lambda *a: [os.makedirs(d, exist_ok=True) for d in a], join_path=lambda *p: str(pathlib.PurePosixPath(*p)),
        bash_completion_path=lambda p: pathlib.PurePosixPath(p, "share/bash-completion/completions"),
        zsh_completion_path=lambda p: pathlib.PurePosixPath(p, "share/zsh/site-functions"),
        fish_completion_path=lambda p: pathlib.PurePosixPath(p, "share/fish/vendor_completions.d"),
        # the commands' outputs are recorded (the test runs them); a file
        # read (the source tarball's COMMIT) is read
        open=lambda path, mode="r": Sink(str(path)) if "w" in mode else open(path, mode),
    )
    pkgmod.__all__ = [k for k in pkgmod.__dict__ if not k.startswith("__")]
    gomod = types.ModuleType("spack_repo.builtin.build_systems.go")
    gomod.GoPackage = GoPackage
    for name in ("spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems", "spack"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["spack_repo.builtin.build_systems.go"] = gomod
    sys.modules["spack.package"] = pkgmod

    ns = {}
    exec(compile(pathlib.Path(path).read_text(), path, "exec"), ns)
    cls = ns["Gpulaunch"]
    pkg = cls()
    releases = [v for v in declared["versions"] if v != "main"]
    pkg.spec = types.SimpleNamespace(version=Version(releases[0] if releases else "main"))
    pkg.prefix = Prefix(prefix)
    pkg.stage = types.SimpleNamespace(source_path=source)
    for attr in vars(cls).values():
        if getattr(attr, "run_after", None) == "install":
            attr(pkg)
    return {
        "versions": {v: kw.get("sha256", "") for v, kw in declared["versions"].items()},
        "cgo_enabled": pkg.cgo_enabled,
        "build_args": pkg.build_args,
        "check_args": pkg.check_args,
        "depends_on": declared["depends_on"],
        "url": cls.url,
        "licenses": declared["licenses"],
        "maintainers": declared["maintainers"],
        "requires": declared["requires"],
        "post_install": declared["calls"],
    }


def easyconfig(path, arch):
    ns = {"SYSTEM": {"name": "system", "version": "system"}, "ARCH": arch}
    exec(compile(pathlib.Path(path).read_text(), path, "exec"), ns)
    tmpl = {"name": ns["name"], "version": ns["version"]}
    resolve = lambda s: s % tmpl
    return {
        "easyblock": ns["easyblock"],
        "name": ns["name"],
        "version": ns["version"],
        "sources": [resolve(s) for s in ns["sources"]],
        "software_license": ns.get("software_license"),
        "software_license_urls": [resolve(s) for s in ns.get("software_license_urls", [])],
        "docurls": [resolve(s) for s in ns.get("docurls", [])],
        "postinstallcmds": ns.get("postinstallcmds", []),
        "source_urls": [resolve(s) for s in ns["source_urls"]],
        "checksums": ns["checksums"],
        "sanity_check_paths": ns["sanity_check_paths"],
        "sanity_check_commands": ns["sanity_check_commands"],
    }


if __name__ == "__main__":
    kind = sys.argv[1]
    out = spack(*sys.argv[2:5]) if kind == "spack" else easyconfig(sys.argv[2], sys.argv[3])
    json.dump(out, sys.stdout, indent=1)
