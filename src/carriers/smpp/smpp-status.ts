/**
 * What a `submit_sm_resp` command_status means for the message. Throttling and a full queue are
 * the SMSC asking to slow down; everything else non-zero is the SMSC refusing this message.
 */

export const ESME_ROK = 0x00;
export const ESME_RMSGQFUL = 0x14;
export const ESME_RTHROTTLED = 0x58;

const NAMES: Record<number, [string, string]> = {
  0x01: ['ESME_RINVMSGLEN', 'message length is invalid'],
  0x02: ['ESME_RINVCMDLEN', 'command length is invalid'],
  0x03: ['ESME_RINVCMDID', 'invalid command'],
  0x04: ['ESME_RINVBNDSTS', 'incorrect bind status'],
  0x08: ['ESME_RSYSERR', 'system error'],
  0x0a: ['ESME_RINVSRCADR', 'invalid source address'],
  0x0b: ['ESME_RINVDSTADR', 'invalid destination address'],
  0x14: ['ESME_RMSGQFUL', 'message queue full'],
  0x43: ['ESME_RINVESMCLASS', 'invalid esm_class'],
  0x45: ['ESME_RSUBMITFAIL', 'submit failed'],
  0x48: ['ESME_RINVSRCTON', 'invalid source address TON'],
  0x49: ['ESME_RINVSRCNPI', 'invalid source address NPI'],
  0x50: ['ESME_RINVDSTTON', 'invalid destination address TON'],
  0x51: ['ESME_RINVDSTNPI', 'invalid destination address NPI'],
  0x58: ['ESME_RTHROTTLED', 'throttling error'],
  0x61: ['ESME_RINVSCHED', 'invalid scheduled delivery time'],
  0x62: ['ESME_RINVEXPIRY', 'invalid validity period'],
  0x66: ['ESME_RX_R_APPN', 'rejected by the SMSC application'],
  0xfe: ['ESME_RDELIVERYFAILURE', 'delivery failure'],
  0xff: ['ESME_RUNKNOWNERR', 'unknown error'],
  0x101: ['ESME_RPROHIBITED', 'prohibited'],
  0x104: ['ESME_RINVDCS', 'invalid data coding scheme'],
};

/** Statuses that mean "later", not "never". */
export function isTransientStatus(status: number): boolean {
  return status === ESME_RTHROTTLED || status === ESME_RMSGQFUL;
}

/** The message's error_code and error_message for a permanent refusal, naming the SMPP status. */
export function submitErrorFor(status: number): { errorCode: string; errorMessage: string } {
  const hex = `0x${status.toString(16).toUpperCase().padStart(8, '0')}`;
  const known = NAMES[status];
  if (!known) return { errorCode: `smpp_status_${hex.toLowerCase()}`, errorMessage: `The carrier refused the message (SMPP status ${hex}).` };
  const [name, text] = known;
  return { errorCode: `smpp_${name.slice('ESME_'.length).toLowerCase()}`, errorMessage: `The carrier refused the message: ${name} (${hex}), ${text}.` };
}
