/**
 * Lingering close, as nginx does it: a request refused before its body was read (413 over the
 * body limit, 401 for a bad key, 429 over a rate limit) is answered while the client may still be
 * writing the body. Closing the socket then, with the client's bytes unread, makes the kernel
 * reset the connection, and the client reads EPIPE or ECONNRESET instead of the answer that tells
 * it what to do (split the bulk, fix the key). So after such an answer the connection is closed
 * for writing only, and what still comes is read and thrown away until the body ends, for at most
 * LINGER_MS and LINGER_BYTES, then closed. At most MAX_LINGERING connections linger at once in a
 * process; past that, one is closed at once, as before.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

export const LINGER_MS = 2_000;
export const LINGER_BYTES = 16 * 1024 * 1024;
export const MAX_LINGERING = 256;

export function installLingeringClose(app: FastifyInstance, limits = { ms: LINGER_MS, bytes: LINGER_BYTES, connections: MAX_LINGERING }): void {
  let lingering = 0;

  const linger = (socket: Socket, request: IncomingMessage) => {
    if (lingering >= limits.connections || socket.destroyed) {
      socket.end();
      socket.once('finish', () => socket.destroy());
      return;
    }
    lingering++;
    let read = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      lingering--;
      clearTimeout(timer);
      if (socket.destroyed) return;
      // What is still being written of the answer goes out first.
      if (socket.writableFinished) socket.destroy();
      else {
        socket.once('finish', () => socket.destroy());
        socket.end();
      }
    };
    const timer = setTimeout(finish, limits.ms);
    timer.unref();
    socket.once('close', finish);
    // Node's HTTP parser goes on feeding the rest of the body to the request, whose data nobody
    // reads any more (the server dumps it): counting it here bounds what is read.
    request.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > limits.bytes) finish();
    });
    // The whole body read, nothing is left for the kernel to answer with a reset.
    request.once('end', finish);
    if (request.complete) {
      finish();
      return;
    }
    request.resume();
    // The answer goes out whole, then this side's FIN; the client's bytes are still read.
    socket.end();
  };

  app.addHook('onSend', async (request, reply) => {
    const raw = request.raw;
    if (raw.complete) return;
    // Answered while the body is still arriving: this connection cannot carry another request,
    // and Node would destroy it as soon as the answer is written (see linger above).
    reply.header('connection', 'close');
    const socket = raw.socket as Socket & { destroySoon?: () => void };
    socket.destroySoon = () => linger(socket, raw);
  });
}
