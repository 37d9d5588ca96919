/*  drv_spawn — start a child: fork, pin, reset signals, exec at once. */
#ifndef DRV_SPAWN_H
#define DRV_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

//  Starts path with argv (argv[0] becomes the process title). cpu >= 0 pins
//  the child to that CPU before exec. Returns the pid, or -1 with the reason in
//  err when fork, pinning or exec failed (an exec failure's errno comes back
//  over a close-on-exec pipe, so it is reported here and not as a crash).
//  keep: descriptors the child keeps over exec (the rest are close-on-exec).
pid_t drv_spawn(const char *path, char *const argv[], int cpu, const int *keep, size_t nkeep, char *err, size_t errlen);

//  Starts path with argv for the loop to watch (posix_spawn, every signal
//  unblocked): stdin from stdin_fd (-1: droverd's), stdout (and stderr
//  with with_stderr) into a pipe whose non-blocking read end is put in
//  *from_child. Returns the pid, or -1 with errno set.
pid_t drv_spawn_piped(const char *path, char *const argv[], int stdin_fd, bool with_stderr, int *from_child);

//  Exit status as one number: the exit code, or 128 + signal.
int drv_spawn_exit_code(int status);

#endif
