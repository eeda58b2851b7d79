/*
 * The glibc floor's pins: forced into every C unit of a cgo build by the
 * Makefile (CGO_CFLAGS -include; pkg/glibcfloor/doc.go), so that the binary
 * built against a newer glibc requires nothing newer than GLIBC_2.28.
 *
 * 1. The floor is GLIBC_2.28, RHEL/Rocky 8's. A symbol whose default
 *    version in the build's glibc is newer than that is bound here, with
 *    .symver, to its oldest version: GLIBC_2.2.5 on x86_64 and GLIBC_2.17
 *    on aarch64, the first version of each architecture's glibc (one
 *    exception: dlinfo came in 2.3.3 on x86_64). Newer glibc keeps the old
 *    version as an alias of the same function, so the binary does on 2.36
 *    what it did before; the floor's glibc has it as its default.
 * 2. Only what is referenced is pinned. A pin on a symbol a unit does not
 *    use costs nothing (the assembler emits no reference), but a symbol
 *    nobody calls has no place here: the floor check of make dist
 *    (scripts/glibc-floor.sh) names any new symbol above the floor, and it
 *    gets its line below with what references it.
 * 3. glibc 2.32 and 2.34 moved pthread_* from libpthread.so.0 and dl*
 *    from libdl.so.2 into libc.so.6, and gave them new versions there. The
 *    link against 2.36 records the old versions against libc.so.6; the
 *    dynamic linker of the floor finds a versioned symbol by name and
 *    version in any library loaded, so the binary must load libpthread.so.0
 *    and libdl.so.2: pkg/glibcfloor's LDFLAGS put them in DT_NEEDED
 *    (-Wl,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2; on 2.34 and
 *    later they are empty stubs).
 * 4. res_search has been exported under that name only since 2.34; before,
 *    resolv.h renamed it to __res_search, in libresolv.so.2. Its pin names
 *    __res_search, and libresolv.so.2 is in DT_NEEDED (-lresolv). net's
 *    cgo resolver, which uses it, stays: nss answers for LDAP or sss host
 *    names on clusters, which netgo does not read.
 * 5. __libc_start_main is referenced by crt1 (Scrt1.o), not by a C unit
 *    this header reaches: pkg/glibcfloor/start_linux.c pins it.
 * 6. This header is for glibc on x86_64 and aarch64 only; the Makefile
 *    applies it nowhere else, and anywhere else it stops the build. The
 *    assembly files gcc preprocesses (runtime/cgo's .S) get it too and
 *    skip it: their references are none of these symbols.
 */
#if !defined(GPULAUNCH_GLIBC_PINS_H) && !defined(__ASSEMBLER__)
#define GPULAUNCH_GLIBC_PINS_H

#if defined(__x86_64__)
#define GPULAUNCH_GLIBC_OLD "GLIBC_2.2.5"
#define GPULAUNCH_GLIBC_DLINFO "GLIBC_2.3.3"
#elif defined(__aarch64__)
#define GPULAUNCH_GLIBC_OLD "GLIBC_2.17"
#define GPULAUNCH_GLIBC_DLINFO "GLIBC_2.17"
#else
#error "pins.h: the glibc floor's pins are for x86_64 and aarch64 only (build with GLIBC_FLOOR=off)"
#endif

#define GPULAUNCH_GLIBC_PIN(sym, as, ver) __asm__(".symver " #sym ", " #as "@" ver)

/* runtime/cgo: starting threads (gcc_libinit.c, gcc_linux_*.c), 2.34 */
GPULAUNCH_GLIBC_PIN(pthread_create, pthread_create, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(pthread_attr_getstacksize, pthread_attr_getstacksize, GPULAUNCH_GLIBC_OLD);
/* runtime/cgo: the thread-exit key of C-created threads (gcc_libinit.c), 2.34 */
GPULAUNCH_GLIBC_PIN(pthread_key_create, pthread_key_create, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(pthread_setspecific, pthread_setspecific, GPULAUNCH_GLIBC_OLD);
/* runtime/cgo: a thread's stack bounds (gcc_stack_unix.c), 2.34 and 2.32 */
GPULAUNCH_GLIBC_PIN(pthread_attr_getstack, pthread_attr_getstack, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(pthread_getattr_np, pthread_getattr_np, GPULAUNCH_GLIBC_OLD);
/* runtime/cgo: signals blocked while a thread starts, 2.32 */
GPULAUNCH_GLIBC_PIN(pthread_sigmask, pthread_sigmask, GPULAUNCH_GLIBC_OLD);
/* go-nvml (pkg/dl): loading libnvidia-ml.so.1 at run time, 2.34 */
GPULAUNCH_GLIBC_PIN(dlopen, dlopen, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(dlsym, dlsym, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(dlclose, dlclose, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(dlerror, dlerror, GPULAUNCH_GLIBC_OLD);
GPULAUNCH_GLIBC_PIN(dlinfo, dlinfo, GPULAUNCH_GLIBC_DLINFO);
/* net: the cgo resolver's DNS queries (cgo_unix_cgo_res.go), 2.34 (rule 4) */
GPULAUNCH_GLIBC_PIN(res_search, __res_search, GPULAUNCH_GLIBC_OLD);

#endif
