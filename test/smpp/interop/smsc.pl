#!/usr/bin/perl
# An SMSC written with Perl's Net::SMPP (Debian: libnet-smpp-perl) for the interoperability tests:
# an implementation of SMPP 3.4 independent of the `smpp` npm package that Pigeon uses.
#
#   perl smsc.pl --system-id ID --password PW [--ids decimal|hex] [--first-id N] [--receipt-ids same|other]
#
# --receipt-ids other: receipts quote each id in the other base (hex ids in decimal, decimal in hex).
#
# Listens on 127.0.0.1 on a free port and prints `{"ev":"listening","port":N}`. Then every event
# is one JSON line on stdout (binds, each submit_sm with its bytes, answers, receipts, unbinds,
# closes); the test drives it with one JSON command per line on stdin:
#
#   {"cmd":"next","actions":["ok", "status:88", "reset", "halfclose", "silent", "receipt-first", ...]}
#       how to treat the next submits, one action each (default "ok"):
#       ok             answer with a new id
#       status:N       answer with command_status N (e.g. 88 = 0x58 throttled, 20 = 0x14 queue full)
#       reset          answer with a new id, then reset the connection (RST) at once
#       halfclose      answer with a new id, then end this side (FIN) and keep reading
#       silent         read it and never answer
#       silent-reset   read it, never answer, and reset the connection
#       receipt-first  send the DELIVRD receipt (text) before answering
#       receipt-tlv-first  the same with the receipt as TLVs only
#       hold           give it an id but hold the answer until {"cmd":"release"}
#       receipt-hold   send the receipt for its id at once, hold the answer until released
#   {"cmd":"receipt","id":"...","stat":"DELIVRD","format":"text|tlv|both"}
#   {"cmd":"halfclose"}   end this side of the current connection now
#   {"cmd":"release"}     send the answers held back; with "then":"reset" or "halfclose", reset
#                         the connection or end this side right after them; with "mark":PATH, create PATH once done (a test whose
#                         event loop is blocked can wait for that file synchronously)
#   {"cmd":"quit"}
#
# One connection is served at a time; a new connection replaces the old one.
use strict;
use warnings;
use Net::SMPP;
use IO::Select;
use Socket qw(SOL_SOCKET SO_LINGER);
use JSON::PP;
use Getopt::Long;

my ($system_id, $password, $ids, $first_id, $receipt_ids) = ('pigeon', 'secret', 'decimal', 1, 'same');
GetOptions('system-id=s' => \$system_id, 'password=s' => \$password, 'ids=s' => \$ids, 'first-id=i' => \$first_id, 'receipt-ids=s' => \$receipt_ids)
  or die "bad arguments\n";
$| = 1;
# Writing to a connection Pigeon has reset must not kill the SMSC.
$SIG{PIPE} = 'IGNORE';
my $json = JSON::PP->new->canonical;
sub emit { print $json->encode({@_}), "\n" }

my $listener = Net::SMPP->new_listen('127.0.0.1', port => 0, smpp_version => 0x34, enquire_interval => 0, async => 1)
  or die "cannot listen: $!\n";
emit(ev => 'listening', port => $listener->sockport);

my $select = IO::Select->new($listener, \*STDIN);
my ($conn, $bind_no, $next_id, $stdin_buf, $ended) = (undef, 0, $first_id, '', 0);
my (@actions, @held);

sub new_id {
  my $n = $next_id++;
  return $ids eq 'hex' ? sprintf('%X', $n) : "$n";
}

sub drop_conn {
  my ($why) = @_;
  return unless $conn;
  $select->remove($conn);
  emit(ev => 'closed', bind => $bind_no, why => $why);
  close $conn;
  $conn = undef;
  $ended = 0;
}

sub reset_conn {
  return unless $conn;
  setsockopt($conn, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
  drop_conn('reset');
}

sub halfclose {
  shutdown($conn, 1);
  $ended = 1;
  emit(ev => 'halfclosed', bind => $bind_no);
}

sub receipt {
  my (%a) = @_;
  return emit(ev => 'error', what => 'no connection for a receipt') unless $conn;
  my $format = $a{format} // 'text';
  if ($receipt_ids eq 'other' && !$a{verbatim}) { $a{id} = $ids eq 'hex' ? hex($a{id}) : sprintf('%X', $a{id}) }
  my @opt;
  my $stat = $a{stat} // 'DELIVRD';
  my %state = (ENROUTE => 1, DELIVRD => 2, EXPIRED => 3, DELETED => 4, UNDELIV => 5, ACCEPTD => 6, UNKNOWN => 7, REJECTD => 8);
  my $text = '';
  if ($format ne 'tlv') {
    my @t = gmtime;
    my $date = sprintf('%02d%02d%02d%02d%02d', $t[5] % 100, $t[4] + 1, $t[3], $t[2], $t[1]);
    $text = sprintf('id:%s sub:001 dlvrd:%s submit date:%s done date:%s stat:%s err:000 text:', $a{id}, $stat eq 'DELIVRD' ? '001' : '000', $date, $date, $stat);
  }
  if ($format ne 'text') {
    push @opt, receipted_message_id => "$a{id}\0", message_state => pack('C', $state{$stat} // 7);
  }
  my $seq = $conn->deliver_sm(
    source_addr_ton => 1, source_addr_npi => 1, source_addr => '447911123456',
    dest_addr_ton => 5, dest_addr_npi => 0, destination_addr => 'Acme',
    esm_class => 0x04, data_coding => 0, short_message => $text, @opt,
  );
  emit(ev => 'receipt', id => $a{id}, stat => $stat, format => $format, seq => $seq);
}

sub command {
  my ($line) = @_;
  my $c = eval { $json->decode($line) } or return emit(ev => 'error', what => "bad command: $line");
  if ($c->{cmd} eq 'next') { push @actions, @{ $c->{actions} } }
  elsif ($c->{cmd} eq 'receipt') { receipt(%$c) }
  elsif ($c->{cmd} eq 'halfclose') {
    halfclose() if $conn;
  }
  elsif ($c->{cmd} eq 'release') {
    for my $h (@held) { emit(ev => 'released', id => $h->[1]); $conn->submit_sm_resp(seq => $h->[0], message_id => $h->[1]) if $conn }
    @held = ();
    reset_conn() if ($c->{then} // '') eq 'reset';
    halfclose() if ($c->{then} // '') eq 'halfclose' && $conn;
    if ($c->{mark}) { open(my $m, '>', $c->{mark}) or die "mark: $!"; close $m }
  }
  elsif ($c->{cmd} eq 'quit') { exit 0 }
  emit(ev => 'ok', cmd => $c->{cmd});
}

sub submit {
  my ($pdu) = @_;
  # After ending its side the SMSC can still read, but answers nothing: Pigeon should not have sent it.
  my $action = $ended ? 'after-halfclose' : shift(@actions) // 'ok';
  my %ev = (
    ev => 'submit', bind => $bind_no, seq => $pdu->{seq}, action => $action,
    src => $pdu->{source_addr}, src_ton => $pdu->{source_addr_ton}, dst => $pdu->{destination_addr},
    esm => $pdu->{esm_class}, dcs => $pdu->{data_coding}, rd => $pdu->{registered_delivery},
    sm => unpack('H*', $pdu->{short_message} // ''),
  );
  # Each event is printed before the answer goes out: the test never sees less than Pigeon.
  if ($action =~ /^status:(\d+)$/) {
    emit(%ev, status => $1 + 0, id => undef);
    return $conn->submit_sm_resp(seq => $pdu->{seq}, status => $1, message_id => '');
  }
  if ($action eq 'silent' || $action eq 'silent-reset' || $action eq 'after-halfclose') {
    emit(%ev, id => undef);
    reset_conn() if $action eq 'silent-reset';
    return;
  }
  my $id = new_id();
  receipt(id => $id, format => $action eq 'receipt-tlv-first' ? 'tlv' : 'text') if $action =~ /^receipt-(?:tlv-)?(?:first|hold)$/;
  if ($action =~ /hold$/) {
    push @held, [$pdu->{seq}, $id];
    return emit(%ev, status => 0, id => $id, held => JSON::PP::true);
  }
  emit(%ev, status => 0, id => $id);
  $conn->submit_sm_resp(seq => $pdu->{seq}, message_id => $id);
  if ($action eq 'reset') { reset_conn() }
  elsif ($action eq 'halfclose') { halfclose() }
}

sub pdu {
  my $pdu = $conn->read_pdu();
  return drop_conn('eof') unless $pdu;
  my $cmd = $pdu->{cmd};
  if ($cmd == 0x00000009) {
    my $ok = ($pdu->{system_id} // '') eq $system_id && ($pdu->{password} // '') eq $password;
    if ($ok) { $bind_no++ }
    $conn->bind_transceiver_resp(seq => $pdu->{seq}, status => $ok ? 0 : 0x0d, system_id => 'perl-smsc');
    emit(ev => $ok ? 'bind' : 'bind-refused', bind => $bind_no, system_type => $pdu->{system_type});
  }
  elsif ($cmd == 0x00000004) { submit($pdu) }
  elsif ($cmd == 0x80000005) { emit(ev => 'deliver_sm_resp', seq => $pdu->{seq}, status => $pdu->{status}) }
  elsif ($ended) { emit(ev => 'after-halfclose', cmd => sprintf('0x%08x', $cmd)) }
  elsif ($cmd == 0x00000015) { $conn->enquire_link_resp(seq => $pdu->{seq}); emit(ev => 'enquire_link') }
  elsif ($cmd == 0x80000015) { }
  elsif ($cmd == 0x00000006) {
    emit(ev => 'unbind', bind => $bind_no);
    $conn->unbind_resp(seq => $pdu->{seq});
  }
  else {
    emit(ev => 'other', cmd => sprintf('0x%08x', $cmd));
    $conn->generic_nack(seq => $pdu->{seq}, status => 0x03);
  }
}

for (;;) {
  for my $fh ($select->can_read) {
    if ($fh == $listener) {
      my $new = $listener->accept or next;
      drop_conn('replaced') if $conn;
      $conn = $new;
      $select->add($conn);
      emit(ev => 'connected');
    }
    elsif ($fh == \*STDIN) {
      my $n = sysread(STDIN, $stdin_buf, 65536, length $stdin_buf);
      exit 0 unless $n;
      while ($stdin_buf =~ s/^([^\n]*)\n//) { command($1) if length $1 }
    }
    elsif ($conn && $fh == $conn) { pdu() }
  }
}
