/*  drv_broker — the data-plane front door. Binds every receiver:zmq endpoint,
    so producers stay connected across worker generations, and spreads their
    messages over each pipeline's routable instances by credit. */
#ifndef DRV_BROKER_H
#define DRV_BROKER_H

#define DRV_BROKER_EXIT_OK 0
#define DRV_BROKER_EXIT_USAGE 100
#define DRV_BROKER_EXIT_SYSTEM 111

int drv_broker_run(const char *control_endpoint, const char *data_endpoint);

#endif
