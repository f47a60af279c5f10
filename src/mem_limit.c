/* mem_limit.c — see mem_limit.h. */
#include "mem_limit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* The first unsigned number in a small file ("max" or a missing file: -1). */
static int read_u64(const char *path, uint64_t *v) {
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fscanf(f, "%" SCNu64, v) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

/* The number after `key` on its line ("key N": /proc/meminfo, a cgroup's memory.stat); 0, or
 * -1 when there is none. */
static int key_value(const char *path, const char *key, uint64_t *v) {
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    size_t kl = strlen(key);
    int found = -1;
    while (found && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ' && sscanf(line + kl, "%" SCNu64, v) == 1)
            found = 0;
    fclose(f);
    return found;
}

int mem_cgroup_available_at(const char *root, uint64_t *bytes) {
    char p_limit[4200], p_usage[4200], p_stat[4200];
    uint64_t limit, usage, inactive = 0;
    const char *inactive_key = "inactive_file";
    snprintf(p_limit, sizeof p_limit, "%s/memory.max", root);
    snprintf(p_usage, sizeof p_usage, "%s/memory.current", root);
    snprintf(p_stat, sizeof p_stat, "%s/memory.stat", root);
    if (read_u64(p_limit, &limit) != 0 || read_u64(p_usage, &usage) != 0) {
        snprintf(p_limit, sizeof p_limit, "%s/memory/memory.limit_in_bytes", root);
        snprintf(p_usage, sizeof p_usage, "%s/memory/memory.usage_in_bytes", root);
        snprintf(p_stat, sizeof p_stat, "%s/memory/memory.stat", root);
        inactive_key = "total_inactive_file";
        if (read_u64(p_limit, &limit) != 0 || read_u64(p_usage, &usage) != 0)
            return -1;
    }
    if (limit >= (UINT64_C(1) << 60))
        return -1;
    /* usage counts the page cache, this process's model file's pages among them: what the
     * kernel drops first under the limit (docker stats counts the same way) */
    if (key_value(p_stat, inactive_key, &inactive) == 0)
        usage = inactive < usage ? usage - inactive : 0;
    *bytes = usage < limit ? limit - usage : 0;
    return 0;
}

int mem_available(uint64_t *bytes) {
    uint64_t kb = 0, c = 0;
    int have_a = key_value("/proc/meminfo", "MemAvailable:", &kb) == 0,
        have_c = mem_cgroup_available_at("/sys/fs/cgroup", &c) == 0;
    uint64_t a = kb * 1024;
    if (!have_a && !have_c)
        return -1;
    *bytes = have_a && have_c ? (a < c ? a : c) : have_a ? a : c;
    return 0;
}

uint64_t mem_budget(int64_t max_memory_bytes) {
    if (max_memory_bytes > 0)
        return (uint64_t)max_memory_bytes;
    uint64_t b;
    if (max_memory_bytes == 0 && mem_available(&b) == 0)
        return b;
    return UINT64_MAX;
}

int mem_check(uint64_t need, uint64_t budget, int64_t max_memory_bytes, const char *what, char *err,
              size_t err_size) {
    if (need <= budget)
        return 0;
    wc_errf(err, err_size,
            "%s needs about %" PRIu64 " MiB, but only %" PRIu64 " MiB of memory is available (%s)",
            what, need >> 20, budget >> 20,
            max_memory_bytes > 0 ? "max_memory_bytes" : "MemAvailable or the cgroup limit");
    return -1;
}
