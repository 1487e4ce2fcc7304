// A FIFO group with the official RocketMQ 5 Node.js client:
// compat/grpc_node_fifo_test.go runs it against a broker's gRPC port (node
// fifo_consumer.js ENDPOINTS TOPIC GROUP; the group is FIFO). A producer
// sends six messages of one message group; a SimpleConsumer receives two
// (invisible for 30 s), finds nothing more while they are in flight,
// acknowledges them, and receives the other four. Prints one JSON object:
// the ids sent, the ids of the first receive, how many the receive in
// between got, and the ids received after the acks, in the order they came.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const logger = require('./logger');

async function main() {
  const [ endpoints, topic, consumerGroup ] = process.argv.slice(2);
  const producer = new Producer({ endpoints, namespace: '', sslEnabled: false, topic, logger });
  await producer.startup();
  const sent = [];
  for (let i = 0; i < 6; i++) {
    sent.push((await producer.send({ topic, tag: 'TagF', messageGroup: 'order-1', body: Buffer.from(`m${i}`) })).messageId);
  }
  await producer.shutdown();

  const consumer = new SimpleConsumer({
    endpoints, namespace: '', sslEnabled: false, consumerGroup, logger,
    subscriptions: new Map([ [ topic, '*' ] ]),
    awaitDuration: 1000,
  });
  await consumer.startup();
  const deadline = Date.now() + 30000;
  let first = [];
  while (first.length === 0 && Date.now() < deadline) {
    first = await consumer.receive(2, 30000);
  }
  const between = (await consumer.receive(16, 30000)).length;
  for (const m of first) {
    await consumer.ack(m);
  }
  const rest = [];
  while (rest.length < 4 && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 30000)) {
      rest.push(m.messageId);
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  console.log(JSON.stringify({ sent, first: first.map(m => m.messageId), between, rest }));
}

main().catch(err => {
  console.error('fifo_consumer failed:', err);
  process.exit(1);
});
