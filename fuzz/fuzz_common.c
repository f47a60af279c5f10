/* fuzz_common.c — see fuzz_common.h. */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *fuzz_scratch_file(const uint8_t *data, size_t size) {
    static char path[256];
    static int fd = -1;
    if (fd < 0) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/wc_fuzz_XXXXXX", dir && *dir ? dir : "/tmp");
        fd = mkstemp(path);
        if (fd < 0)
            return NULL;
        unlink(path); /* reached through /proc so that no file outlives the fuzzer */
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return NULL;
    return path;
}

const char *fuzz_shared_path(const char *rel) {
    static char path[4096];
    const char *env = getenv("WHISPERC_SHARED");
    snprintf(path, sizeof path, "%s/%s", env && *env ? env : WC_SOURCE_ROOT "/../shared", rel);
    return path;
}
