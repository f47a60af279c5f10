/*
 * ptx_cmd.c — `whisper-c ptx --size NAME [--sm N] [--out DIR]`: writes every kernel the CUDA
 * backend generates for a model size as DIR/NAME.ptx, so anyone can read or assemble them
 * (ptxas -arch=sm_90 DIR/NAME.ptx). Uses the library's internal generators (src/kernels).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "kernels/kernels.h"
#include "model/model_file.h"

static void usage(void) {
    printf("usage: whisper-c ptx --size NAME [--sm N] [--out DIR]\n"
           "  --size NAME  tiny.en, tiny, base.en, base, small(.en), medium(.en), large-v1,\n"
           "               large-v2, large-v3, large-v3-turbo\n"
           "  --sm N       target architecture (default 80; 90 for Hopper)\n"
           "  --out DIR    directory for the .ptx files (default: ptx-NAME-smN)\n");
}

int cmd_ptx(int argc, char **argv) {
    const char *size = NULL, *out = NULL;
    int sm = 80;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            size = argv[++i];
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--sm") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 50 || v > 200) {
                fprintf(stderr, "whisper-c ptx: bad --sm '%s' (e.g. 80, 86, 89, 90)\n", argv[i]);
                return 2;
            }
            sm = (int)v;
        } else {
            fprintf(stderr, "whisper-c ptx: unknown argument '%s' (see whisper-c ptx --help)\n",
                    argv[i]);
            return 2;
        }
    }
    struct wc_hparams hp;
    if (!size || model_size_hparams(size, &hp) != 0) {
        fprintf(stderr, "whisper-c ptx: %s '%s'; sizes:", size ? "unknown size" : "need --size",
                size ? size : "");
        for (int i = 0; model_size_names[i]; i++)
            fprintf(stderr, " %s", model_size_names[i]);
        fputc('\n', stderr);
        return 2;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", out ? out : "");
    if (!out)
        snprintf(dir, sizeof dir, "ptx-%s-sm%d", size, sm);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "whisper-c ptx: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    struct kernel_src *ks;
    int n = kernels_for_model(&hp, sm, &ks);
    if (n < 0) {
        fprintf(stderr, "whisper-c ptx: out of memory\n");
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.ptx", dir, ks[i].name);
        FILE *f = fopen(path, "w");
        if (!f || fputs(ks[i].ptx, f) == EOF || fclose(f) != 0) {
            fprintf(stderr, "whisper-c ptx: %s: %s\n", path, strerror(errno));
            rc = 1;
        } else {
            printf("%s\n", path);
        }
    }
    kernels_free(ks, n);
    return rc;
}
