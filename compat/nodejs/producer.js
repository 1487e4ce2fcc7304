// A RocketMQ 5 producer, as an application would write it with the
// official Node.js client: compat/grpc_node_test.go runs it against a
// broker's gRPC port (node producer.js ENDPOINTS TOPIC) and checks what it
// prints, one JSON object of the message ids it was answered, against what
// the broker stored.
'use strict';

const { Producer } = require('rocketmq-client-nodejs');

// The client logs to a file under the home directory by default; here its
// warnings and errors go to stderr, where the test shows them.
const logger = require('./logger');

async function main() {
  const [ endpoints, topic ] = process.argv.slice(2);
  const producer = new Producer({
    endpoints,
    namespace: '',
    sslEnabled: false,
    topic,
    logger,
    // The test commits its own transaction (orphan.js has the checker
    // asked about one left open).
    checker: { async check() { return 1; } },
  });
  await producer.startup();
  const ids = {};
  ids.normal = (await producer.send({
    topic, tag: 'TagN', keys: [ 'key-normal' ], body: Buffer.from('normal body'),
    properties: new Map([ [ 'color', 'blue' ] ]),
  })).messageId;
  ids.fifo = (await producer.send({ topic, tag: 'TagF', messageGroup: 'order-1', body: Buffer.from('fifo body') })).messageId;
  ids.delay = (await producer.send({ topic, tag: 'TagD', deliveryTimestamp: new Date(Date.now() + 1000), body: Buffer.from('delayed body') })).messageId;
  const tx = producer.beginTransaction();
  ids.txn = (await producer.send({ topic, tag: 'TagT', body: Buffer.from('txn body') }, tx)).messageId;
  await tx.commit();
  await producer.shutdown();
  console.log(JSON.stringify(ids));
}

main().catch(err => {
  console.error('producer failed:', err);
  process.exit(1);
});
