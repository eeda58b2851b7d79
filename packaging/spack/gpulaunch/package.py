# Copyright Spack Project Developers. See COPYRIGHT file for details.
#
# SPDX-License-Identifier: (Apache-2.0 OR MIT)

# Spack recipe for gpulaunch (a repo's packages/gpulaunch/package.py), for
# Spack 1.0 or newer: the GoPackage import below is spack-packages'
# (spack_repo.builtin), which Spack 0.23 and older do not have.
#
# `make dist` writes this file with the release's line under "versions"
# (dist/spack/gpulaunch/package.py) and `url` naming that release: the
# version and the sha256 of its source tarball, gpulaunch-VERSION-src.tar.gz,
# whose modules are vendored so that a build node without the module proxy
# builds it. The tarball carries the commit and date of the release (the
# files COMMIT and SOURCE_DATE_EPOCH, which the Makefile reads): the binary
# is stamped as `make build` stamps it, and says the same `gpulaunch version`.
#
# cgo is on: go-nvml (NVML telemetry, MIG) needs it. Spack's GoPackage
# builds with CGO_ENABLED=0 unless a recipe says cgo_enabled = True.

import datetime
import glob
import os

from spack_repo.builtin.build_systems.go import GoPackage

from spack.package import *


class Gpulaunch(GoPackage):
    """Start N copies of a program inside a Slurm allocation (or on any Linux
    GPU node: NVIDIA, AMD or Intel), each on its own GPUs, NUMA-local CPUs and
    memory policy, and supervise them until every one has exited; rank
    wrapper for srun and mpirun; GPU task queues; DDP groups."""

    homepage = "https://github.com/gpulaunch/gpulaunch"
    url = "https://github.com/gpulaunch/gpulaunch/releases/download/v1.0.0/gpulaunch-1.0.0-src.tar.gz"
    git = "https://github.com/gpulaunch/gpulaunch.git"

    maintainers("gpulaunch")

    license("Apache-2.0")

    # versions (make dist adds each release's line below this one)
    version("main", branch="main")

    depends_on("go@1.26:", type="build")
    depends_on("c", type="build")  # cgo, for go-nvml

    # Linux only: CPU affinity, memory policy, cgroups, /proc (elsewhere Go
    # says "build constraints exclude all Go files").
    requires("platform=linux", msg="gpulaunch runs on Linux only")

    cgo_enabled = True

    @property
    def build_args(self):
        args = super().build_args
        # The Makefile's stamps, in place of GoPackage's "-s -w": the symbol
        # table and DWARF stay, as in the release binaries (debuggers, perf).
        stamp = [f"-X main.version={self.spec.version}"]
        src = self.stage.source_path
        commit = join_path(src, "COMMIT")
        epoch = join_path(src, "SOURCE_DATE_EPOCH")
        if os.path.exists(commit) and os.path.exists(epoch):
            with open(commit) as f:
                stamp.append(f"-X main.commit={f.read().strip()}")
            with open(epoch) as f:
                when = datetime.datetime.fromtimestamp(int(f.read().strip()), datetime.timezone.utc)
            stamp.append(f"-X main.buildDate={when.strftime('%Y-%m-%dT%H:%M:%SZ')}")
            # as the Makefile: the stamps are the tarball's, and a stage
            # inside another git checkout must neither lend the binary that
            # checkout's commit nor fail where git refuses it
            args.append("-buildvcs=false")
        i = args.index("-ldflags")
        args[i + 1] = " ".join(stamp)
        args.extend(["-trimpath", "./cmd/gpulaunch"])
        return args

    @run_after("install")
    def install_man_and_completions(self):
        gpulaunch = Executable(self.prefix.bin.gpulaunch)

        man1 = join_path(self.prefix.share, "man", "man1")
        mkdirp(man1)
        with open(join_path(man1, "gpulaunch.1"), "w") as file:
            gpulaunch("man", output=file)

        mkdirp(bash_completion_path(self.prefix))
        with open(bash_completion_path(self.prefix) / "gpulaunch", "w") as file:
            gpulaunch("completion", "bash", output=file)

        mkdirp(zsh_completion_path(self.prefix))
        with open(zsh_completion_path(self.prefix) / "_gpulaunch", "w") as file:
            gpulaunch("completion", "zsh", output=file)

        mkdirp(fish_completion_path(self.prefix))
        with open(fish_completion_path(self.prefix) / "gpulaunch.fish", "w") as file:
            gpulaunch("completion", "fish", output=file)

    @run_after("install")
    def install_docs(self):
        # share/doc/gpulaunch as `make install` and the release tarballs have
        # it: the licence and third-party notices, the changelog, the docs
        # and the JSON schemas. (Spack writes its own modulefiles: the
        # tarballs' Lmod one is not installed.)
        src = self.stage.source_path
        doc = join_path(self.prefix.share, "doc", "gpulaunch")
        mkdirp(join_path(doc, "docs"))
        for name in ("README.md", "LICENSE", "THIRD_PARTY_NOTICES", "CHANGELOG.md"):
            install(join_path(src, name), doc)
        for pattern in ("*.md", "*.json", "*.svg"):
            for path in sorted(glob.glob(join_path(src, "docs", pattern))):
                install(path, join_path(doc, "docs"))

    @property
    def check_args(self):
        # `spack install --test=root`: the unit tests need neither a GPU nor
        # Slurm (GoPackage's default, `go test` in the root, finds no package).
        return ["./..."]
