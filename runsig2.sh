#!/bin/bash
name=$1; shift
T=/work/main/.build/debug/tokenet
exec 3<&0; $T "$@" <&3 > out.$name 2> err.$name &
pid=$!
sleep 6; kill -INT $pid; s=$(date +%s); sleep 3; kill -INT $pid 2>/dev/null; sleep 3; kill -TERM $pid 2>/dev/null
wait $pid; echo "rc=$? $(( $(date +%s)-s ))s after first INT"; cat out.$name err.$name | tail -5
