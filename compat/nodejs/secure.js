// A RocketMQ 5 producer and SimpleConsumer over TLS with credentials, as
// an application would write them with the official Node.js client:
// compat/grpc_node_secure_test.go runs it against a broker's gRPC port
// with TLS and the ACL on (node secure.js ENDPOINTS TOPIC GROUP; the
// account's keys in LEDGERMQ_ACCESS_KEY and LEDGERMQ_SECRET_KEY; the
// test's CA trusted through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, which
// @grpc/grpc-js reads), and compat/grpc_node_proxy_test.go against a
// proxy with the ACL on in plain text (LEDGERMQ_PLAINTEXT=1). It sends two messages,
// receives and acknowledges them, and prints one JSON object: the ids
// sent and the ids and bodies received.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const logger = require('./logger');

async function main() {
  const [ endpoints, topic, consumerGroup ] = process.argv.slice(2);
  const sessionCredentials = {
    accessKey: process.env.LEDGERMQ_ACCESS_KEY,
    accessSecret: process.env.LEDGERMQ_SECRET_KEY,
  };
  const common = { endpoints, namespace: '', sslEnabled: process.env.LEDGERMQ_PLAINTEXT !== '1', sessionCredentials, logger, requestTimeout: 3000 };
  const producer = new Producer({ ...common, topic });
  await producer.startup();
  const sent = [];
  for (const body of [ 'secure one', 'secure two' ]) {
    sent.push((await producer.send({ topic, tag: 'TagS', body: Buffer.from(body) })).messageId);
  }
  await producer.shutdown();

  const consumer = new SimpleConsumer({
    ...common, consumerGroup,
    subscriptions: new Map([ [ topic, 'TagS' ] ]),
    awaitDuration: 2000,
  });
  await consumer.startup();
  const received = [];
  const deadline = Date.now() + 12000;
  while (received.length < sent.length && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 10000)) {
      received.push({ id: m.messageId, body: m.body.toString() });
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  console.log(JSON.stringify({ sent, received }));
}

main().catch(err => {
  console.error('secure failed:', err);
  process.exit(1);
});
