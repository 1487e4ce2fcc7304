// A transactional producer that goes away between sending its half message
// and ending the transaction, and a second producer of the same topic
// whose transaction checker commits it, with the official RocketMQ 5
// Node.js client: compat/grpc_node_orphan_test.go runs it against a
// broker's gRPC port (node orphan.js ENDPOINTS TOPIC GROUP). The broker's
// check-back finds the orphaned half message and asks the second producer
// over its telemetry stream (RecoverOrphanedTransactionCommand); the
// checker's COMMIT makes it visible, and a SimpleConsumer receives it.
// Prints one JSON object: the id sent, the ids the checker was asked
// about and the message received.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const logger = require('./logger');

const COMMIT = 1; // apache.rocketmq.v2.TransactionResolution.COMMIT

async function main() {
  const [ endpoints, topic, consumerGroup ] = process.argv.slice(2);

  // The first producer sends a half message and leaves without a word.
  const first = new Producer({ endpoints, namespace: '', sslEnabled: false, topic, logger,
    checker: { async check() { return 0; } } });
  await first.startup();
  const tx = first.beginTransaction();
  const sent = (await first.send({ topic, tag: 'TagO', body: Buffer.from('orphan body') }, tx)).messageId;
  await first.shutdown();

  // The second one is asked about it, and commits.
  const checked = [];
  const second = new Producer({ endpoints, namespace: '', sslEnabled: false, topic, logger,
    checker: {
      async check(view) {
        checked.push({ id: view.messageId, body: view.body.toString(), topic: view.topic });
        return COMMIT;
      },
    } });
  await second.startup();

  const consumer = new SimpleConsumer({
    endpoints, namespace: '', sslEnabled: false, consumerGroup, logger,
    subscriptions: new Map([ [ topic, '*' ] ]),
    awaitDuration: 3000,
  });
  await consumer.startup();
  let received = null;
  const deadline = Date.now() + 60000;
  while (!received && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 10000)) {
      received = { id: m.messageId, body: m.body.toString() };
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  await second.shutdown();
  console.log(JSON.stringify({ sent, checked, received }));
}

main().catch(err => {
  console.error('orphan failed:', err);
  process.exit(1);
});
