"""The Harvard sentences (IEEE Recommended Practice for Speech Quality Measurements, 1969), lists 1
to 5: phonetically balanced English written for listening tests, used here as text this project
did not write."""

LISTS = [
    ["The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.",
     "It's easy to tell the depth of a well.", "These days a chicken leg is a rare dish.",
     "Rice is often served in round bowls.", "The juice of lemons makes fine punch.",
     "The box was thrown beside the parked truck.", "The hogs were fed chopped corn and garbage.",
     "Four hours of steady work faced us.", "A large size in stockings is hard to sell."],
    ["The boy was there when the sun rose.", "A rod is used to catch pink salmon.",
     "The source of the huge river is the clear spring.", "Kick the ball straight and follow through.",
     "Help the woman get back to her feet.", "A pot of tea helps to pass the evening.",
     "Smoky fires lack flame and heat.", "The soft cushion broke the man's fall.",
     "The salt breeze came across from the sea.", "The girl at the booth sold fifty bonds."],
    ["Her purse was full of useless trash.", "The colt reared and threw the tall rider.",
     "It snowed, rained, and hailed the same morning.", "Read verse out loud for pleasure.",
     "Hoist the load to your left shoulder.", "Take the winding path to reach the lake.",
     "Note closely the size of the gas tank.", "Wipe the grease off his dirty face.",
     "Mend the coat before you go out.", "The wrist was badly strained and hung limp."],
    ["The stray cat gave birth to kittens.", "The young girl gave no clear response.",
     "The meal was cooked before the bell rang.", "What joy there is in living.",
     "A king ruled the state in the early days.", "The ship was torn apart on the sharp reef.",
     "Sickness kept him home the third week.", "The wide road shimmered in the hot sun.",
     "The lazy cow lay in the cool grass.", "Lift the square stone over the fence."],
    ["The rope will bind the seven books at once.", "Hop over the fence and plunge in.",
     "The friendly gang left the drug store.", "Mesh wire keeps chicks inside.",
     "The frosty air passed through the coat.", "The crooked maze failed to fool the mouse.",
     "Adding fast leads to wrong sums.", "The show was a flop from the very start.",
     "A saw is a tool used for making boards.", "The wagon moved on well oiled wheels."],
]
SENTENCES = [sentence for sentences in LISTS for sentence in sentences]
