# Spack recipe for gpulaunch (a repo's packages/gpulaunch/package.py).
#
# `make dist` writes this file with the release's line under "versions"
# (dist/spack/gpulaunch/package.py): the version and the sha256 of its
# source tarball, gpulaunch-VERSION-src.tar.gz, whose modules are vendored
# so that a build node without the module proxy builds it.
#
# cgo is on: go-nvml (NVML telemetry, MIG) needs it. Spack's GoPackage
# builds with CGO_ENABLED=0 unless a recipe says cgo_enabled = True.

from spack_repo.builtin.build_systems.go import GoPackage

from spack.package import *


class Gpulaunch(GoPackage):
    """Start N copies of a program inside a Slurm allocation (or on any Linux
    GPU node: NVIDIA, AMD or Intel), each on its own GPUs, NUMA-local CPUs and
    memory policy, and supervise them until every one has exited; rank
    wrapper for srun and mpirun; GPU task queues; DDP groups."""

    homepage = "https://github.com/gpulaunch/gpulaunch"
    url = "https://github.com/gpulaunch/gpulaunch/releases/download/v0.0.0/gpulaunch-0.0.0-src.tar.gz"
    git = "https://github.com/gpulaunch/gpulaunch.git"

    # versions (make dist adds each release's line below this one)
    version("main", branch="main")

    depends_on("go@1.26:", type="build")
    depends_on("c", type="build")  # cgo, for go-nvml

    cgo_enabled = True

    def url_for_version(self, version):
        return f"https://github.com/gpulaunch/gpulaunch/releases/download/v{version}/gpulaunch-{version}-src.tar.gz"

    @property
    def build_args(self):
        args = super().build_args
        stamp = f"-X main.version={self.spec.version}"
        # GoPackage passes "-ldflags", "-s -w": add the version stamp to it.
        i = args.index("-ldflags")
        args[i + 1] = f"{args[i + 1]} {stamp}"
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

    @property
    def check_args(self):
        # `spack install --test=root`: the unit tests need neither a GPU nor
        # Slurm (GoPackage's default, `go test` in the root, finds no package).
        return ["./..."]
