/*  drv_signals — signals as a file descriptor for the supervisor loop. */
#ifndef DRV_SIGNALS_H
#define DRV_SIGNALS_H

//  Blocks SIGCHLD, SIGTERM, SIGINT, SIGHUP and SIGQUIT in this thread (call it
//  before any other thread exists, so ZeroMQ's threads inherit the mask) and
//  returns a signalfd for them, or -1.
int drv_signals_open(void);

//  Reads one pending signal; returns its number, 0 if none, -1 on error.
int drv_signals_read(int fd);

#endif
