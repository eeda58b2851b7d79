-- -*- lua -*-
-- Lmod modulefile of gpulaunch @VERSION@ (packaging/lmod/gpulaunch.lua; `make
-- install` writes it to MODULEFILES/gpulaunch/@VERSION@.lua: docs/install.md).
--
-- The installed tree's root: the prefix make install wrote in below when the
-- modulefile went elsewhere (MODULEFILES=dir), else found from this file's
-- own path, ROOT/share/lmod/modulefiles/gpulaunch/VERSION.lua, so that the
-- tree works wherever it is unpacked (the release tarballs are this tree).

local root = "@PREFIX@"
if root == "" or root:sub(1, 1) == "@" then
   local dir, n = myFileName():gsub("/share/lmod/modulefiles/[^/]+/[^/]+%.lua$", "")
   if n ~= 1 then
      LmodError("gpulaunch's modulefile ", myFileName(), " is not at ROOT/share/lmod/modulefiles/gpulaunch/VERSION.lua",
                " and has no prefix written in: install it with `make install PREFIX=… MODULEFILES=…`")
   end
   root = dir
end

help([[
gpulaunch @VERSION@: run N pinned copies of a program on the GPUs of a Slurm
allocation, each on its own GPU(s), NUMA-local CPUs and memory policy, and
supervise them.

  gpulaunch info                  what this job was given
  gpulaunch plan -n 4             where 4 instances would go
  gpulaunch -n 4 -l -- ./app      run them
  man gpulaunch                   every command and flag

Documents: ]] .. pathJoin(root, "share/doc/gpulaunch") .. "\n")

whatis("Name: gpulaunch")
whatis("Version: @VERSION@")
whatis("Category: tools, GPU, Slurm")
whatis("Description: starts N instances of a program on a GPU node, binds each to its GPU(s) and NUMA-local CPUs, supervises them; task queues, rank mode, scaling studies")

prepend_path("PATH", pathJoin(root, "bin"))
-- an empty MANPATH entry keeps the system's pages (man-db reads it as the
-- default path): without it, a MANPATH holding only ours hides them
if os.getenv("MANPATH") == nil then
   append_path("MANPATH", "")
end
prepend_path("MANPATH", pathJoin(root, "share/man"))

-- completions: bash-completion, zsh and fish look in XDG_DATA_DIRS
-- (share/bash-completion/completions, share/fish/vendor_completions.d) and
-- FPATH (site-functions) of a shell started after the load; the XDG
-- default is kept when the variable was unset
if os.getenv("XDG_DATA_DIRS") == nil then
   append_path("XDG_DATA_DIRS", "/usr/local/share")
   append_path("XDG_DATA_DIRS", "/usr/share")
end
prepend_path("XDG_DATA_DIRS", pathJoin(root, "share"))
prepend_path("FPATH", pathJoin(root, "share/zsh/site-functions"))
-- the bash that loads the module gets the completion at once (source_sh:
-- Lmod 8.6 and later)
if myShellName() == "bash" and source_sh ~= nil then
   source_sh("bash", pathJoin(root, "share/bash-completion/completions/gpulaunch"))
end
