// A RocketMQ 5 PushConsumer, as an application would write it with the
// official Node.js client: compat/grpc_node_consumer_test.go runs it
// against a broker's gRPC port (node push_consumer.js ENDPOINTS TOPIC
// GROUP). It sends three messages; its listener consumes "ok-1" and
// "ok-2", and fails "fail-once" at its first delivery, which the client
// then makes invisible for its retry policy's backoff
// (ChangeInvisibleDuration) until the broker delivers it again. Once the
// four consumptions happened it prints them, one JSON object, and waits
// for its stdin to close (the test has checked the acks meanwhile) to exit.
'use strict';

const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const logger = require('./logger');

async function main() {
  const [ endpoints, topic, consumerGroup ] = process.argv.slice(2);
  const consumed = [];
  let done;
  const allConsumed = new Promise(resolve => { done = resolve; });
  const consumer = new PushConsumer({
    endpoints, namespace: '', sslEnabled: false, consumerGroup, logger,
    subscriptions: new Map([ [ topic, '*' ] ]),
    messageListener: {
      consume(m) {
        const body = m.body.toString();
        consumed.push({ id: m.messageId, body, attempt: m.deliveryAttempt });
        if (consumed.length >= 4) {
          done();
        }
        return body === 'fail-once' && m.deliveryAttempt === 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
      },
    },
  });
  await consumer.startup();

  const producer = new Producer({ endpoints, namespace: '', sslEnabled: false, topic, logger });
  await producer.startup();
  const sent = {};
  for (const body of [ 'ok-1', 'ok-2', 'fail-once' ]) {
    sent[body] = (await producer.send({ topic, tag: 'TagP', body: Buffer.from(body) })).messageId;
  }
  await producer.shutdown();

  const timeout = setTimeout(() => {
    console.error('push consumer: consumed only', JSON.stringify(consumed));
    process.exit(1);
  }, 40000);
  await allConsumed;
  clearTimeout(timeout);
  console.log(JSON.stringify({ sent, consumed }));
  // The long poll under way would hold a graceful shutdown up to its
  // timeout: exit once the test is done with us.
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}

main().catch(err => {
  console.error('push_consumer failed:', err);
  process.exit(1);
});
