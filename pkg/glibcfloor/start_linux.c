//go:build glibcfloor && cgo && (amd64 || arm64)

// The start path of the glibc floor (pins.h's rule 5).
//
// crt1 (Scrt1.o) of glibc 2.34 and later calls __libc_start_main@GLIBC_2.34
// with no init function: that glibc runs the program's constructors
// (DT_INIT, .init_array) itself. Older glibc has only the first version,
// whose callers' crt1 passes an init function (__libc_csu_init) that runs
// them; given none, it runs no constructor of the program. So this file
// defines __libc_start_main in the program, hidden: crt1's call binds to it
// at link time (a definition in the program wins over a library's), and it
// calls the first version with an init function of its own, the work of
// __libc_csu_init: _init, then .init_array in order. Newer glibc given an
// init function treats the program as a legacy one and calls it instead
// of running the constructors itself, so they run once on both.
// .preinit_array is not init's: the dynamic linker runs it for a
// dynamically linked program, on every glibc.
//
// A definition rather than -Wl,--wrap: go's linker tries its host-linker
// flags (-no-pie among them) on a trivial program with the packages'
// LDFLAGS, and a wrapped __libc_start_main fails that link, so the flags
// would be dropped silently.

#include <stddef.h>

typedef int (*glibcfloor_main)(int, char **, char **);
typedef void (*glibcfloor_init)(int, char **, char **);

// glibcfloor_libc_start_main is the first version of __libc_start_main.
extern int glibcfloor_libc_start_main(glibcfloor_main, int, char **, glibcfloor_init,
				      void (*)(void), void (*)(void), void *);
#if defined(__x86_64__)
__asm__(".symver glibcfloor_libc_start_main, __libc_start_main@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver glibcfloor_libc_start_main, __libc_start_main@GLIBC_2.17");
#else
#error "glibcfloor: x86_64 and aarch64 only"
#endif

// The linker's bounds of the executable's .init_array, and crti's _init.
extern glibcfloor_init __init_array_start[] __attribute__((visibility("hidden")));
extern glibcfloor_init __init_array_end[] __attribute__((visibility("hidden")));
extern void _init(void);

// glibcfloor_run_constructors is __libc_csu_init's work for a dynamically
// linked program.
static void glibcfloor_run_constructors(int argc, char **argv, char **envp) {
	_init();
	size_t n = (size_t)(__init_array_end - __init_array_start);
	for (size_t i = 0; i < n; i++) {
		__init_array_start[i](argc, argv, envp);
	}
}

__attribute__((visibility("hidden"))) int __libc_start_main(glibcfloor_main main, int argc, char **argv, glibcfloor_init init,
			     void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
	// A crt1 older than 2.34 (a build on the floor itself) passes its own.
	if (init == NULL) {
		init = glibcfloor_run_constructors;
	}
	return glibcfloor_libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end);
}

// glibcfloor_constructor_runs counts the runs of the constructor below:
// the test's evidence that the start path ran the constructors, once.
int glibcfloor_constructor_runs;

__attribute__((constructor)) static void glibcfloor_count_constructor_run(void) {
	glibcfloor_constructor_runs++;
}
