/*  drover-produce's two modes: a counted run (producer.c) and JSON lines
    from stdin (producer_stdin.c). */
#ifndef DRV_PRODUCER_H
#define DRV_PRODUCER_H

#include <signal.h>

//  drover-produce ENDPOINT [--ack] [--batch N] [--timeout MS]: returns the exit code.
int drv_produce_stdin(int argc, char *argv[], volatile sig_atomic_t *stop);
//  SIGTERM and SIGINT call handler.
void drv_produce_signals(void (*handler)(int));

#endif
