// Part of the library test/sanitized_backend.sh preloads after libasan (AddressSanitizer run). Without
// it the postmaster hangs before main() gets anywhere.
//
// Debian's postgres needs libgpg-error (through libsystemd and libgcrypt), whose constructor calls
// bindtextdomain() before libasan's own constructor has run: a preloaded library is initialised after
// the libraries the executable needs. bindtextdomain() calls malloc() while it holds glibc's
// _nl_state_lock, and that first malloc() initialises ASan. ASan's initialisation looks up the optional
// symbol swift_demangle with dlsym() and clears the failure with dlerror(), which translates the error
// message under the same lock, then unlocks it although the outer bindtextdomain() still holds it: the
// lock's state is corrupted and PostgreSQL's own bindtextdomain() in main() waits on it forever.
//
// With the symbol defined, dlsym() succeeds and dlerror() has nothing to translate. ASan calls
// swift_demangle only to try a name as a Swift name; NULL means "not one", and its C++ demangler is used.
#include <stddef.h>
#include <stdint.h>

char *swift_demangle(const char *mangled, size_t mangled_length, char *output, size_t *output_length, uint32_t flags);

char *swift_demangle(const char *mangled, size_t mangled_length, char *output, size_t *output_length, uint32_t flags) {
    (void)mangled;
    (void)mangled_length;
    (void)output;
    (void)output_length;
    (void)flags;
    return NULL;
}
