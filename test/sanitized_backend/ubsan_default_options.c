// Part of the library test/sanitized_backend.sh preloads after libasan (AddressSanitizer run): the
// options of UndefinedBehaviorSanitizer in the server's backends.
//
// UBSan's runtime (gcc's libubsan, loaded with the extension) reads UBSAN_OPTIONS only when it first
// reports, and from /proc/self/environ, i.e. from the memory the process started with. In a backend that
// memory holds the process title: the postmaster moves its environment away and reuses the area for it
// (ps display). So UBSAN_OPTIONS is never seen and a report neither shows its stack nor aborts (it ends
// the backend with exit(1)). The runtime also asks the program for default options through this weak
// symbol, and finds this definition first: it precedes libubsan in the global scope.
//
// Every report aborts the backend, so that the postmaster sees a crash, and shows its stack. The report
// goes to the backend's stderr, i.e. the server log: in a process with libasan, gcc 12's libubsan
// ignores log_path (it honours it without libasan).

// The name the runtime looks up, reserved as it is.
const char *__ubsan_default_options(void);  // NOLINT(bugprone-reserved-identifier)

const char *__ubsan_default_options(void) {  // NOLINT(bugprone-reserved-identifier)
    return "halt_on_error=1:abort_on_error=1:print_stacktrace=1";
}
