/*  replay — runs a fuzz target's LLVMFuzzerTestOneInput over files and the
    files in directories, without libFuzzer: make test replays the seed corpus
    and every regression (a crash the fuzzer once found) with any compiler.
    Usage: replay_TARGET PATH...   (a missing path is skipped) */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int s_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    size_t got = fread(data, 1, (size_t)size, f);
    fclose(f);
    LLVMFuzzerTestOneInput(data, got);
    free(data);
    return 0;
}

int main(int argc, char *argv[])
{
    int inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            inputs += s_run_file(argv[i]) == 0;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        struct dirent *entry;
        while (dir && (entry = readdir(dir))) {
            if (entry->d_name[0] == '.' || !strcmp(entry->d_name, "README.md")) {
                continue;
            }
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], entry->d_name);
            inputs += s_run_file(path) == 0;
        }
        if (dir) {
            closedir(dir);
        }
    }
    printf("replayed %d inputs\n", inputs);
    return inputs > 0 ? 0 : 1;
}
