/*
 * test_mem_limit.c — the cgroup's memory left (src/mem_limit.c) from cgroup v2 and v1 file
 * trees written under a temporary directory: limit minus usage, less the inactive page cache;
 * no limit ("max", or v1's huge number) and no files mean no figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "mem_limit.h"

static void put(const char *dir, const char *name, const char *text) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs(text, f) >= 0);
    if (f)
        fclose(f);
}

static void drop(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

int main(void) {
    char root[] = "/tmp/wc_test_mem_limit_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    uint64_t b = 0;
    CHECK(mem_cgroup_available_at(root, &b) == -1); /* no files */

    /* v2: 8 GiB limit, 6 GiB used of which 3 GiB inactive page cache */
    put(root, "memory.max", "8589934592\n");
    put(root, "memory.current", "6442450944\n");
    put(root, "memory.stat",
        "anon 1073741824\nfile 4294967296\nactive_anon 0\n"
        "inactive_anon 0\nactive_file 1073741824\n"
        "inactive_file 3221225472\nunevictable 0\n");
    CHECK(mem_cgroup_available_at(root, &b) == 0 && b == UINT64_C(5) << 30);
    drop(root, "memory.stat"); /* no statistics: usage as it is */
    CHECK(mem_cgroup_available_at(root, &b) == 0 && b == UINT64_C(2) << 30);
    put(root, "memory.current", "9663676416\n"); /* over the limit: 0, not a wrap */
    CHECK(mem_cgroup_available_at(root, &b) == 0 && b == 0);
    put(root, "memory.max", "max\n");
    CHECK(mem_cgroup_available_at(root, &b) == -1);
    drop(root, "memory.max");
    drop(root, "memory.current");

    /* v1: 4 GiB limit, 3 GiB used, 2 GiB of it inactive file pages (total_ counts children) */
    char v1[4300];
    snprintf(v1, sizeof v1, "%s/memory", root);
    CHECK(mkdir(v1, 0700) == 0);
    put(v1, "memory.limit_in_bytes", "4294967296\n");
    put(v1, "memory.usage_in_bytes", "3221225472\n");
    put(v1, "memory.stat",
        "cache 2147483648\ninactive_file 1\ntotal_cache 2147483648\n"
        "total_inactive_file 2147483648\n");
    CHECK(mem_cgroup_available_at(root, &b) == 0 && b == UINT64_C(3) << 30);
    put(v1, "memory.limit_in_bytes", "9223372036854771712\n"); /* v1's "no limit" */
    CHECK(mem_cgroup_available_at(root, &b) == -1);

    drop(v1, "memory.limit_in_bytes");
    drop(v1, "memory.usage_in_bytes");
    drop(v1, "memory.stat");
    rmdir(v1);
    rmdir(root);
    printf("%s\n", test_failures ? "FAILED" : "OK");
    return TEST_RESULT();
}
