-- claimLocked's first step: the messages ids locked and read.
?{locked_messages}
