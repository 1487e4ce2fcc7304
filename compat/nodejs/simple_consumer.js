// A RocketMQ 5 SimpleConsumer, as an application would write it with the
// official Node.js client: compat/grpc_node_test.go runs it against a
// broker's gRPC port (node simple_consumer.js ENDPOINTS TOPIC GROUP). It
// sends three messages, receives them (each invisible for 2 s), then
// acknowledges the first, gives the second 6 s more
// (changeInvisibleDuration) and leaves the third; it waits for the third
// and then the second to be delivered again, acknowledges them, and prints
// one JSON object: the ids sent, the first deliveries and the
// redeliveries in the order they came, each with its delivery attempt.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const logger = require('./logger');

async function main() {
  const [ endpoints, topic, consumerGroup ] = process.argv.slice(2);
  const producer = new Producer({ endpoints, namespace: '', sslEnabled: false, topic, logger });
  await producer.startup();
  const sent = [];
  for (const body of [ 'first', 'second', 'third' ]) {
    sent.push((await producer.send({ topic, tag: 'TagS', body: Buffer.from(body) })).messageId);
  }
  await producer.shutdown();

  const consumer = new SimpleConsumer({
    endpoints, namespace: '', sslEnabled: false, consumerGroup, logger,
    subscriptions: new Map([ [ topic, 'TagS' ] ]),
    awaitDuration: 3000,
  });
  await consumer.startup();
  const byBody = new Map();
  const first = [];
  const deadline = Date.now() + 30000;
  while (byBody.size < 3 && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 2000)) {
      const body = m.body.toString();
      first.push({ id: m.messageId, body, attempt: m.deliveryAttempt });
      byBody.set(body, m);
    }
  }
  if (byBody.size < 3) {
    throw new Error(`received ${byBody.size} of 3 messages`);
  }
  await consumer.ack(byBody.get('first'));
  await consumer.changeInvisibleDuration(byBody.get('second'), 6000);

  const again = [];
  while (again.length < 2 && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 20000)) {
      again.push({ id: m.messageId, body: m.body.toString(), attempt: m.deliveryAttempt });
      await consumer.ack(m);
    }
  }
  // Nothing else comes back: everything is acknowledged.
  const rest = await consumer.receive(16, 20000);
  await consumer.shutdown();
  console.log(JSON.stringify({ sent, first, again, rest: rest.length }));
}

main().catch(err => {
  console.error('simple_consumer failed:', err);
  process.exit(1);
});
