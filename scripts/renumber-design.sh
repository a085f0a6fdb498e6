#!/usr/bin/env bash
# Renumber "DESIGN §x.y" citations to docs/DESIGN.md's sections, using the
# old -> new table in docs/design-sections.tsv. Run from anywhere in the repo:
#
#   scripts/renumber-design.sh            # dry run: what would change
#   scripts/renumber-design.sh --apply    # rewrite the files
#
# Every tracked *.rs, *.md, *.toml and *.sh file is rewritten in ONE pass per
# file (old 4.1 -> 3.1 and old 3.1 -> 2.1 never chain), so apply it exactly
# once: a second run would renumber the new numbers again.
#
# What is rewritten: "DESIGN §N" with N a whole section number (§4.1 never
# matches inside §4.10; a sentence-ending "§4." is section 4), and the
# numbers listed right after it: "DESIGN §4.2, §4.4", "DESIGN §4.3/§4.4",
# "DESIGN §4.3/4.4", "DESIGN §5.2 and §5.3". Citations of other documents
# ("paper §II-A", "seed §4.3", "RFC 8200 §4.5") are never touched, nor
# "DESIGN.md §…" (already new numbers). Lines that mention DESIGN and still
# hold a bare "§<digit>" afterwards are listed for a look by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

apply=0
case "${1:-}" in
--apply) apply=1 ;;
"") ;;
*)
    echo "usage: $0 [--apply]" >&2
    exit 2
    ;;
esac

map=docs/design-sections.tsv
[ -f "$map" ] || {
    echo "missing $map" >&2
    exit 1
}

mapfile -t files < <(git ls-files -- '*.rs' '*.md' '*.toml' '*.sh' |
    grep -v -e '^docs/DESIGN\.md$' -e '^docs/design-sections\.tsv$' -e '^scripts/renumber-design\.sh$')

MAP="$map" APPLY="$apply" perl -e '
use strict; use warnings;
my %m;
open(my $fh, "<", $ENV{MAP}) or die "$ENV{MAP}: $!";
while (<$fh>) {
    chomp; next if $. == 1 || /^\s*$/;
    my ($old, $new) = split /\t/;
    die "bad line $.: $_\n" unless defined $new && $old =~ /^\d+(\.\d+)*$/ && $new =~ /^\d+(\.\d+)*$/;
    $m{$old} = $new;
}
# The files are handled as bytes: "§" and "–" are two- and three-byte
# sequences, always grouped below so a "?" applies to the whole character.
my $num = qr/\d+(?:\.\d+)*(?!\d)/;
# Space between words, possibly across one line break and a comment leader.
my $gap = qr/(?:[ \t]*\n[ \t]*(?:\/\/[\/!]?|#+|\*)?[ \t]*|[ \t]+)/;
my $sep = qr/(?:,$gap(?:§)|$gap(?:and|or)$gap(?:§)|\/(?:§)?|(?:–)(?:§)?)/;
my ($changed_files, $changed_refs, @unknown, @review) = (0, 0);
for my $f (@ARGV) {
    open(my $in, "<:raw", $f) or die "$f: $!";
    local $/; my $text = <$in>; close $in;
    next unless $text =~ /DESIGN/;
    my $line_of = sub { my ($pos) = @_; 1 + (substr($text, 0, $pos) =~ tr/\n//) };
    my $map1 = sub {
        my ($n, $pos) = @_;
        if (exists $m{$n}) { $changed_refs++; return $m{$n}; }
        push @unknown, "$f:" . $line_of->($pos) . ": §$n not in the table";
        return $n;
    };
    my $new = $text;
    $new =~ s{(DESIGN$gap(?:§))($num)((?:$sep$num)*)}{
        my ($head, $first, $rest, $pos) = ($1, $2, $3, $-[0]);
        my $out = $head . $map1->($first, $pos);
        my %seen = ($m{$first} // $first => 1);
        my $prev = $first;
        while ($rest =~ /\G($sep)($num)/gc) {
            my ($s, $n) = ($1, $2);
            if ($s =~ /^(?:–)/ && $prev =~ /^(\d+)\.(\d+)$/) {
                # A range "§8.1–8.3" becomes the list of the sections it
                # spans: they need not be neighbours after renumbering.
                my ($major, $lo) = ($1, $2);
                my ($hi) = $n =~ /^\Q$major\E\.(\d+)$/;
                if (defined $hi) {
                    for my $k (($lo + 1) .. $hi) {
                        my $to = $map1->("$major.$k", $pos);
                        $out .= ", §$to" unless $seen{$to}++;
                    }
                    $prev = $n;
                    next;
                }
            }
            my $to = $map1->($n, $pos);
            # Two old sections that became one are cited once.
            $out .= $s . $to unless $seen{$to}++;
            $prev = $n;
        }
        $out
    }ge;
    # A bare "§<digit>" shortly after a DESIGN citation may cite it in
    # another form ("KA-Rate (DESIGN §3.3) or RCP-Echo (§3.4)"): list it.
    my $probe = $text;
    $probe =~ s{DESIGN$gap(?:§)$num(?:$sep$num)*}{"DESIGN" . ("_" x (length($&) - 6))}ge;
    $probe =~ s{(?:paper|seed|seeds|RFC \d+|its|the draft|Vivace|Allegro)[^§\n]{0,30}(?:§)\d}{"_" x length($&)}ge;
    while ($probe =~ /(?:§)\d/g) {
        my $pos = $-[0];
        next unless substr($probe, ($pos > 160 ? $pos - 160 : 0), ($pos > 160 ? 160 : $pos)) =~ /DESIGN/;
        my $ln = $line_of->($pos);
        my $line = (split /\n/, $text, -1)[$ln - 1];
        $line =~ s/^\s+//;
        push @review, "$f:$ln: $line\n";
    }
    next if $new eq $text;
    $changed_files++;
    if ($ENV{APPLY}) {
        open(my $out, ">:raw", $f) or die "$f: $!";
        print $out $new; close $out;
    }
}
printf "%s %d citations in %d files\n", ($ENV{APPLY} ? "renumbered" : "would renumber"), $changed_refs, $changed_files;
print "not in the table (left as they are):\n", map { "  $_\n" } @unknown if @unknown;
print "check by hand (a bare § shortly after a DESIGN citation):\n", map { "  $_" } @review if @review;
' "${files[@]}"
