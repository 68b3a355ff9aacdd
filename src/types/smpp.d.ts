/**
 * Our own declarations for the parts of `smpp` 0.5.1 that Pigeon uses (the package ships none).
 * PDU fields are dynamic (named as in the SMPP specification), hence the index signature.
 */
declare module 'smpp' {
  import { EventEmitter } from 'node:events';
  import type { Server as NetServer } from 'node:net';

  export class PDU {
    constructor(command: string, options?: Record<string, unknown>);
    command: string;
    command_id: number;
    command_status: number;
    sequence_number: number;
    [field: string]: unknown;
    isResponse(): boolean;
    response(options?: Record<string, unknown>): PDU;
  }

  export class Session extends EventEmitter {
    constructor(options: Record<string, unknown>);
    socket: import('node:net').Socket;
    send(pdu: PDU, responseCallback?: (pdu: PDU) => void, sendCallback?: (pdu: PDU) => void): boolean;
    close(callback?: () => void): void;
    destroy(callback?: () => void): void;
    pause(): void;
    resume(): void;
    bind_transceiver(options: Record<string, unknown>, callback?: (pdu: PDU) => void): boolean;
    submit_sm(options: Record<string, unknown>, callback?: (pdu: PDU) => void): boolean;
    deliver_sm(options: Record<string, unknown>, callback?: (pdu: PDU) => void): boolean;
    enquire_link(options?: Record<string, unknown> | ((pdu: PDU) => void), callback?: (pdu: PDU) => void): boolean;
    unbind(options?: Record<string, unknown> | ((pdu: PDU) => void), callback?: (pdu: PDU) => void): boolean;
  }

  export class Server extends NetServer {
    sessions: Session[];
  }

  export function connect(options: { host: string; port: number; [option: string]: unknown }, listener?: () => void): Session;
  export function createServer(listener: (session: Session) => void): Server;
  export function createServer(options: Record<string, unknown>, listener: (session: Session) => void): Server;

}
