/*  drv_preflight — see drv_preflight.h. */
#include "drv_preflight.h"
#include "drv_supervisor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int drv_preflight_private_dir(const char *what, const char *path, bool create, char *why, size_t whylen)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    struct stat there;
    if (!create && lstat(buf, &there) != 0 && errno == ENOENT) {
        return 0; // checked if it is there; made (0700) by whoever first needs it
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                snprintf(why, whylen, "cannot create %s: %s", buf, strerror(errno));
                return -1;
            }
            *p = '/';
        }
    }
    if (mkdir(buf, 0700) == 0) {
        return 0;
    }
    if (errno != EEXIST) {
        snprintf(why, whylen, "cannot create %s %s: %s", what, buf, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(buf, &st) != 0) {
        snprintf(why, whylen, "cannot inspect %s %s: %s", what, buf, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "%s %s exists and is not a directory (a symlink is refused too)", what, buf);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, whylen, "%s %s is owned by uid %u, not by droverd's uid %u", what, buf, (unsigned)st.st_uid,
                 (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, whylen, "%s %s is writable by %s (mode %03o); it must not be", what, buf,
                 (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 0777));
        return -1;
    }
    return chmod(buf, 0700) == 0 ? 0
                                 : (snprintf(why, whylen, "cannot chmod %s %s: %s", what, buf, strerror(errno)), -1);
}

int drv_preflight_token(const char *path, char **token, char *why, size_t whylen)
{
    FILE *file = fopen(path, "r");
    char line[1024] = "";
    if (!file || !fgets(line, sizeof line, file)) {
        snprintf(why, whylen, "engine.admin.http_token_file: cannot read %s: %s", path,
                 file ? "empty" : strerror(errno));
        if (file) {
            fclose(file);
        }
        return -1;
    }
    fclose(file);
    line[strcspn(line, "\r\n")] = 0;
    if (strlen(line) < 16) {
        snprintf(why, whylen, "engine.admin.http_token_file: token in %s is shorter than 16 characters", path);
        return -1;
    }
    if (token) {
        *token = strdup(line);
    }
    return 0;
}

int drv_supervisor_check(const drv_config_t *config, char *why, size_t whylen)
{
    //  What a start would stop at before serving, in the order it meets
    //  them; nothing is created (a missing run_dir is made at start).
    if (drv_preflight_private_dir("run_dir", config->run_dir, false, why, whylen) != 0 ||
        (config->buffer_dir &&
         drv_preflight_private_dir("engine.buffer_dir", config->buffer_dir, false, why, whylen) != 0)) {
        return DRV_EXIT_CONFIG; // --check says "this configuration will not start" with one code
    }
    if (config->http_token_file && drv_preflight_token(config->http_token_file, NULL, why, whylen) != 0) {
        return DRV_EXIT_CONFIG;
    }
    if (config->curve_server_secret_file && access(config->curve_server_secret_file, R_OK) != 0) {
        snprintf(why, whylen, "engine.admin.curve: cannot read %s: %s", config->curve_server_secret_file,
                 strerror(errno));
        return DRV_EXIT_CONFIG;
    }
    return DRV_EXIT_OK;
}
