# Sourced by the fetch scripts (fetch_vocab.sh, fetch_nist.sh): a list of
# files with pinned sha256, one "SUM NAME" per line in FILES, checked and
# installed the same way. The caller defines say().

# pinned_present DIR: 0 when every file of FILES is in DIR.
pinned_present() {
  local sum name
  while read -r sum name; do
    [ -n "$name" ] || continue
    [ -f "$1/$name" ] || return 1
  done <<< "$FILES"
  return 0
}

# pinned_verify SRC: every file of FILES in SRC has its pinned sha256 (else
# says which does not and exits 1).
pinned_verify() {
  local sum name have
  while read -r sum name; do
    [ -n "$name" ] || continue
    have=$(sha256sum "$1/$name" | cut -d' ' -f1)
    if [ "$have" != "$sum" ]; then say "sha256 mismatch for $name: expected $sum, got $have"; exit 1; fi
  done <<< "$FILES"
}

# pinned_install SRC DIR: copies every file of FILES from SRC into DIR, each
# through a temporary name and a rename (an interrupted run leaves no half
# file).
pinned_install() {
  local sum name
  mkdir -p "$2"
  while read -r sum name; do
    [ -n "$name" ] || continue
    install -m 0644 "$1/$name" "$2/$name.part"
    mv "$2/$name.part" "$2/$name"
  done <<< "$FILES"
}
