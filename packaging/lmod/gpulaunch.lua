-- -*- lua -*-
-- Lmod modulefile of gpulaunch @VERSION@ (packaging/lmod/gpulaunch.lua; `make
-- install` writes it to MODULEFILES/gpulaunch/@VERSION@.lua: docs/install.md).
--
-- A plain module: it sets variables and, in bash, registers the completion
-- that the first TAB loads; a load starts no process (every batch script
-- loads it), and an unload undoes exactly what the load did.

-- The installed tree's root, by these rules (docs/install.md, "How it finds
-- the tree"):
--   1. The prefix written in the next line is the root: `make install` writes
--      PREFIX there when the modulefile goes elsewhere (MODULEFILES=dir), and
--      a copy in a site's tree gets it by hand (the one-line edit).
--   2. Else the root is found from this file's real path, links resolved, as
--      ROOT/share/lmod/modulefiles/gpulaunch/VERSION.lua: the tree works
--      wherever it is unpacked (the release tarballs are this tree), and a
--      site's tree may link its gpulaunch/VERSION.lua to this file.
--   3. Else the load stops, with an error naming both ways.
local root = "@PREFIX@"

-- realPath is path with every link resolved: luaposix's realpath (Lmod
-- itself needs luaposix), else lfs's link targets followed, else path.
local function realPath(path)
   local okPosix, posix = pcall(require, "posix")
   if okPosix and type(posix) == "table" and posix.realpath then
      local real = posix.realpath(path)
      if real then return real end
   end
   local okLfs, lfs = pcall(require, "lfs")
   if not okLfs or type(lfs) ~= "table" or not lfs.symlinkattributes then
      return path
   end
   for _ = 1, 40 do -- the kernel's own limit on links followed
      local target = lfs.symlinkattributes(path, "target")
      if target == nil or target == "" then return path end
      if target:sub(1, 1) ~= "/" then
         target = path:gsub("[^/]*$", "") .. target
      end
      path = target
   end
   return path
end

if root == "" or root:sub(1, 1) == "@" then
   local real = realPath(myFileName())
   local dir, n = real:gsub("/share/lmod/modulefiles/[^/]+/[^/]+%.lua$", "")
   if n ~= 1 then
      LmodError("gpulaunch's modulefile " .. myFileName() .. " is neither at nor linked to"
                .. " ROOT/share/lmod/modulefiles/gpulaunch/VERSION.lua, and has no prefix written in:"
                .. " link it to the installed tree's file, or in a copy write the tree's root into"
                .. ' its line local root = "" (docs/install.md)')
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

-- pathEntries are value's entries between ':', empty ones too.
local function pathEntries(value)
   local out = {}
   for entry in (value .. ":"):gmatch("([^:]*):") do
      out[#out + 1] = entry
   end
   return out
end

-- holdsOnly says whether the entries of value, but one of ours, are all
-- in defaults and every default is among them (Lmod writes a trailing
-- empty entry as "::").
local function holdsOnly(value, ours, defaults)
   local want, seen, skipped = {}, {}, false
   for _, d in ipairs(defaults) do want[d] = true end
   for _, entry in ipairs(pathEntries(value)) do
      if entry == ours and not skipped then
         skipped = true
      elseif not want[entry] then
         return false
      else
         seen[entry] = true
      end
   end
   for _, d in ipairs(defaults) do
      if not seen[d] then return false end
   end
   return true
end

-- prependKeepingDefault prepends ours to the path variable name, keeping
-- what the variable meant when it was unset, and unloads to unset again:
--   1. Load, the variable unset or empty: defaults (what a program reads
--      for it unset) are appended first, then ours is prepended.
--   2. Unload (Lmod runs this file again with every append_path and
--      prepend_path turned into a removal, and unsets a path variable it
--      has emptied): the defaults are removed with ours when the variable
--      holds nothing else, i.e. it was unset (or set to what unset means)
--      before the load; else (it was set, or another module has added to it
--      since) only ours is.
--   3. Load, the variable set: ours is prepended.
local function prependKeepingDefault(name, ours, defaults)
   local value = os.getenv(name) or ""
   local unset
   if mode() == "unload" then
      unset = holdsOnly(value, ours, defaults)
   else
      unset = value == ""
   end
   if unset then
      for _, d in ipairs(defaults) do
         append_path(name, d)
      end
   end
   prepend_path(name, ours)
end

prepend_path("PATH", pathJoin(root, "bin"))
-- an empty MANPATH entry keeps the system's pages (man-db reads it as the
-- default path): without it, a MANPATH holding only ours hides them
prependKeepingDefault("MANPATH", pathJoin(root, "share/man"), {""})
-- completions: bash-completion and fish look in XDG_DATA_DIRS
-- (share/bash-completion/completions, share/fish/vendor_completions.d) of a
-- shell started after the load; XDG's default is kept when the variable was
-- unset
prependKeepingDefault("XDG_DATA_DIRS", pathJoin(root, "share"), {"/usr/local/share", "/usr/share"})

-- shQuote is s in single quotes, as bash and zsh read them.
local function shQuote(s)
   return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- addToZshPath adds dir to zsh's function path, by these rules:
--   1. FPATH set in the environment (a user or site exports it): dir is
--      prepended to it, and removed at unload, as any path.
--   2. Else FPATH is not set, and must not become set: an exported FPATH
--      replaces the whole fpath of every zsh started after it (zsh's own
--      function directories, which only the zsh binary knows, compinit
--      among them: "compinit: function definition file not found"), and
--      in a zsh that loads the module it replaces that shell's fpath as
--      well (Lmod's TACC/Lmod#718 and #853 are the same mistake). The zsh
--      that loads the module gets dir in its fpath by a command run there
--      (unload removes it); other shells get nothing, and a zsh started
--      later finds the completion through ~/.zshrc's fpath line
--      (docs/install.md, "Shell completions").
local function addToZshPath(dir)
   if (os.getenv("FPATH") or "") ~= "" then
      prepend_path("FPATH", dir)
   elseif myShellName() == "zsh" then
      execute{cmd = "fpath=(" .. shQuote(dir) .. " $fpath)", modeA = {"load"}}
      execute{cmd = "fpath=(${fpath:#" .. shQuote(dir) .. "})", modeA = {"unload"}}
   end
end
addToZshPath(pathJoin(root, "share/zsh/site-functions"))

-- The bash that loads the module completes gpulaunch at once: its first
-- TAB after gpulaunch sources the installed script (which registers
-- _gpulaunch in place of _gpulaunch_load) and completes with it, as
-- bash-completion's loader does in a shell started later. No process and
-- no script at load; unload removes the function and the completion.
if myShellName() == "bash" then
   local script = pathJoin(root, "share/bash-completion/completions/gpulaunch")
   set_shell_function("_gpulaunch_load", "source " .. shQuote(script) .. ' && _gpulaunch "$@"', "")
   complete("bash", "gpulaunch", "-o bashdefault -o default -F _gpulaunch_load")
end

-- Site defaults (docs/install.md, "Site defaults"): a site's copy of this
-- file sets them for everyone who loads it; a flag given on the command line
-- always wins. For example:
-- setenv("GPULAUNCH_MONITOR_INTERVAL", "10s")
-- setenv("GPULAUNCH_METRICS_FILE", "/run/gpulaunch/%j/%N.prom") -- a directory the job's prolog makes
-- setenv("GPULAUNCH_METRICS_LISTEN", "127.0.0.1:9400")
-- setenv("GPULAUNCH_REPORT", "gpulaunch-%j.%s.json") -- one per job step: two runs given one name overwrite each other
