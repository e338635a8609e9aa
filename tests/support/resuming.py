"""A `--launcher none` command that "resumes" after a restart-mode resize, for resize-chain tests:
rank 0 prints steps 1-5 (loss 10 - step) the first time, steps 4-8 after (a marker in ck/ says so);
every node then sleeps until stopped. Run it from a work dir holding `ck/`."""

RESUMING = (
    'if [ "$GPUDECK_NODE_RANK" = 0 ]; then s=1; [ -e ck/resumed ] && s=4; touch ck/resumed; '
    'for i in $(seq $s $((s + 4))); do echo "{\\"step\\": $i, \\"loss\\": $((10 - i))}"; done; fi; exec sleep 300'
)
