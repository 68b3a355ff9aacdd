#!/usr/bin/perl
# An ESME written with Perl's Net::SMPP (Debian: libnet-smpp-perl) that binds to Pigeon's SMPP
# listener: a client implementation of SMPP 3.4 independent of the `smpp` npm package.
#
#   perl esme.pl --port N --system-id ID --password PW
#
# Binds as a transceiver, then reads one JSON command per line on stdin and prints one JSON
# event per line on stdout:
#   {"cmd":"submit","source":"Acme","ton":5,"to":"447700900001","coding":0,"hex":"...","esm_class":0,"registered_delivery":1}
#       -> {"ev":"submit_resp","status":N,"message_id":"..."}
#   {"cmd":"receive","count":N,"timeout":S}   read N deliver_sm, answering each with status 0
#       -> {"ev":"deliver_sm","esm_class":N,"data_coding":N,"source":"...","destination":"...","hex":"...","receipted_message_id":"...","message_state":N} each
#       -> {"ev":"received","count":N}
#   {"cmd":"unbind"}  -> {"ev":"unbind_resp","status":N}, then exit
use strict;
use warnings;
use Net::SMPP;
use IO::Select;
use JSON::PP;
use Getopt::Long;

my ($port, $system_id, $password) = (2775, '', '');
GetOptions('port=i' => \$port, 'system-id=s' => \$system_id, 'password=s' => \$password) or die "bad arguments\n";
$| = 1;
my $json = JSON::PP->new->canonical;
sub emit { print $json->encode({@_}), "\n" }

my ($smpp, $resp) = Net::SMPP->new_transceiver('127.0.0.1', port => $port, system_id => $system_id, password => $password, smpp_version => 0x34, enquire_interval => 0);
if (!$smpp) {
  emit(ev => 'bind_failed', status => ($resp ? $resp->{status} : -1));
  exit 1;
}
emit(ev => 'bound', status => $resp->{status});

while (my $line = <STDIN>) {
  my $c = $json->decode($line);
  if ($c->{cmd} eq 'submit') {
    my $r = $smpp->submit_sm(
      source_addr_ton => $c->{ton}, source_addr_npi => 0, source_addr => $c->{source},
      dest_addr_ton => 1, dest_addr_npi => 1, destination_addr => $c->{to},
      esm_class => $c->{esm_class} // 0, data_coding => $c->{coding} // 0,
      registered_delivery => $c->{registered_delivery} // 0,
      short_message => pack('H*', $c->{hex}),
    );
    emit(ev => 'submit_resp', status => ($r ? $r->{status} : -1), message_id => ($r ? ($r->{message_id} // '') : ''));
  } elsif ($c->{cmd} eq 'receive') {
    my $sel = IO::Select->new($smpp);
    my $got = 0;
    my $deadline = time + ($c->{timeout} // 10);
    while ($got < $c->{count} && time < $deadline) {
      next unless $sel->can_read(0.2);
      my $pdu = $smpp->read_pdu() or last;
      if ($pdu->{cmd} == 0x00000005) {
        $got++;
        emit(ev => 'deliver_sm', esm_class => $pdu->{esm_class}, data_coding => $pdu->{data_coding},
             source => $pdu->{source_addr}, destination => $pdu->{destination_addr},
             hex => unpack('H*', $pdu->{short_message} // ''),
             receipted_message_id => ($pdu->{receipted_message_id} // ''),
             message_state => (defined $pdu->{message_state} ? unpack('C', $pdu->{message_state}) : -1));
        $smpp->deliver_sm_resp(seq => $pdu->{seq}, message_id => '');
      } elsif ($pdu->{cmd} == 0x00000015) {
        $smpp->enquire_link_resp(seq => $pdu->{seq});
      }
    }
    emit(ev => 'received', count => $got);
  } elsif ($c->{cmd} eq 'unbind') {
    my $r = $smpp->unbind();
    emit(ev => 'unbind_resp', status => ($r ? $r->{status} : -1));
    last;
  }
}
