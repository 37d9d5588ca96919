/*  kafka_mock — librdkafka's own mock cluster (rdkafka_mock.h: the real
    Kafka protocol on loopback) in a process of its own, for the tests and
    benchmarks of receiver:kafka and exporter:kafka (docs/operations.md,
    "Kafka").

        kafka_mock BROKERS [TOPIC:PARTITIONS...]

    Prints "bootstrap HOST:PORT,..." once the brokers listen, then reads
    commands on stdin, one per line, and answers each with a line:
        down [ID]   brokers refuse connections (ID: one; default all)
        up [ID]     they accept them again
        topic NAME PARTITIONS
    It ends at the end of its stdin or on SIGTERM: a test that dies takes
    its cluster with it. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: kafka_mock BROKERS [TOPIC:PARTITIONS...]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "kafka_mock: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, atoi(argv[1]));
    if (!cluster) {
        fprintf(stderr, "kafka_mock: the mock cluster did not start\n");
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        char *colon = strrchr(argv[i], ':');
        if (!colon) {
            fprintf(stderr, "kafka_mock: %s: TOPIC:PARTITIONS\n", argv[i]);
            return 2;
        }
        *colon = 0;
        rd_kafka_mock_topic_create(cluster, argv[i], atoi(colon + 1), 1);
    }
    printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(cluster));
    fflush(stdout);
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        char verb[32] = "", name[256] = "";
        int number = -1;
        int words = sscanf(line, "%31s %255s %d", verb, name, &number);
        if (words < 1) {
            continue;
        }
        rd_kafka_resp_err_t rc = RD_KAFKA_RESP_ERR_NO_ERROR;
        int id = words >= 2 ? atoi(name) : -1;
        if (!strcmp(verb, "down")) {
            rc = rd_kafka_mock_broker_set_down(cluster, id);
        } else if (!strcmp(verb, "up")) {
            rc = rd_kafka_mock_broker_set_up(cluster, id);
        } else if (!strcmp(verb, "topic") && words == 3) {
            rc = rd_kafka_mock_topic_create(cluster, name, number, 1);
        } else {
            printf("error unknown command\n");
            fflush(stdout);
            continue;
        }
        printf(rc ? "error %s\n" : "ok\n", rd_kafka_err2str(rc));
        fflush(stdout);
    }
    rd_kafka_mock_cluster_destroy(cluster);
    rd_kafka_destroy(rk);
    return 0;
}
