#!/bin/bash
wc -w < "$CORPUS" | tr -d ' ' > /app/count.txt
