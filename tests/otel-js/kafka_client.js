// kafkajs, a Kafka client in pure JavaScript that nobody here wrote, beside
// kcat (tests/integration/test_kafka_js.py):
//   node kafka_client.js produce BROKERS TOPIC COUNT PREFIX
//     COUNT messages {"body": "PREFIX-N"}, keyed by N (kafkajs' own
//     partitioner spreads them), acks from every in-sync replica;
//   node kafka_client.js consume BROKERS TOPIC COUNT GROUP
//     reads TOPIC from its beginning in consumer group GROUP until COUNT
//     messages came (or 60 s), and prints them as a JSON array of
//     {partition, offset, value}.
const { Kafka, logLevel } = require('kafkajs');

const [mode, brokers, topic, countText, name] = process.argv.slice(2);
const count = Number(countText);
const kafka = new Kafka({ clientId: 'drover-test', brokers: brokers.split(','), logLevel: logLevel.NOTHING });

async function produce() {
  const producer = kafka.producer();
  await producer.connect();
  for (let first = 0; first < count; first += 500) {
    const messages = [];
    for (let n = first; n < Math.min(count, first + 500); n++) {
      messages.push({ key: String(n), value: JSON.stringify({ body: `${name}-${n}` }) });
    }
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();
  process.stdout.write(JSON.stringify({ produced: count }) + '\n');
}

async function consume() {
  const consumer = kafka.consumer({ groupId: name, sessionTimeout: 10000, rebalanceTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        got.push({ partition, offset: Number(message.offset), value: message.value.toString('utf8') });
        if (got.length >= count) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  process.stdout.write(JSON.stringify(got) + '\n');
}

(mode === 'produce' ? produce() : consume()).catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
